"""TorchData-style namespaces: ``from functorch_core.data.datapipes.iter import Mapper``.

As ``torchdata.datapipes``, the package itself holds ``functional_datapipe``
and ``DataChunk``.
"""

from ..datapipe import DataChunk, functional_datapipe
from . import iter, map

__all__ = ["DataChunk", "functional_datapipe", "iter", "map"]
