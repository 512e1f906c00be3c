"""``torchdata.datapipes.iter``'s names: the iterable-style DataPipes.

``MapToIterConverter`` is an iterable pipe that TorchData lists here; it is
defined with its twin in ``functorch_core.data.map``.
"""

from ..datapipe import IterDataPipe
from ..iter import *  # noqa: F403
from ..iter import __all__ as _names
from ..map import MapToIterConverter

__all__ = ["IterDataPipe", "MapToIterConverter", *_names]
