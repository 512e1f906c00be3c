"""DataPipes: composable, resumable data loading (TorchData's names and semantics).

``functorch_core.data`` holds the bases, the iterable-style pipes by class name,
the graph utilities and the collate functions (``collate``, ``default_collate``);
map-style pipes whose names repeat an iter pipe's (``Mapper``, ``Batcher``,
``Shuffler``) live in ``functorch_core.data.datapipes.map``.
"""

from . import iter as _iter
from .collation import collate, default_collate
from .datapipe import DataChunk, IterDataPipe, MapDataPipe, functional_datapipe
from .distributed import DistributedSampler
from .graph import (
    apply_random_seed,
    apply_sharding,
    apply_shuffle_settings,
    find,
    list_datapipes,
    remove_dp,
    render,
    replace,
    traverse,
)
from .iter import *  # noqa: F403
from .loader import DataLoader, DataLoaderWorkerError, WorkerInfo, get_worker_info
from .map import IterToMapConverter, MapToIterConverter, SequenceWrapper

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe",
           "collate", "default_collate",
           "apply_random_seed", "apply_sharding", "apply_shuffle_settings",
           "find", "list_datapipes", "remove_dp", "render", "replace", "traverse",
           "IterToMapConverter", "MapToIterConverter", "SequenceWrapper",
           "DataLoader", "DataLoaderWorkerError", "DistributedSampler", "WorkerInfo",
           "get_worker_info",
           *_iter.__all__]
