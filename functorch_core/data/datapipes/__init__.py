"""TorchData-style namespaces: ``from functorch_core.data.datapipes.iter import Mapper``."""

from . import iter, map

__all__ = ["iter", "map"]
