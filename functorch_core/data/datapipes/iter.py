"""``torchdata.datapipes.iter``'s names: the iterable-style DataPipes."""

from ..datapipe import IterDataPipe
from ..iter import *  # noqa: F403
from ..iter import __all__ as _names

__all__ = ["IterDataPipe", *_names]
