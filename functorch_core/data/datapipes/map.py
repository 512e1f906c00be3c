"""``torchdata.datapipes.map``'s names: the map-style DataPipes."""

from ..datapipe import MapDataPipe
from ..map import *  # noqa: F403
from ..map import __all__ as _names

__all__ = ["MapDataPipe", *_names]
