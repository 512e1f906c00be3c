"""Iterable-style DataPipes, grouped by family as TorchData groups them.

Each family module lists its pipes in ``__all__``; add a family with one import line.
"""

from . import callable, combinatorics, grouping, selecting, sharding, util
from .callable import *  # noqa: F403
from .combinatorics import *  # noqa: F403
from .grouping import *  # noqa: F403
from .selecting import *  # noqa: F403
from .sharding import *  # noqa: F403
from .util import *  # noqa: F403

__all__ = [name for module in (callable, combinatorics, grouping, selecting, sharding, util)
           for name in module.__all__]

from . import (
    archive,
    asyncmapper,
    bucketbatcher,
    combining,
    counting,
    fileio,
    forking,
    fsspec,
    httpreader,
    memory,
    ondiskcache,
    plain_text,
    randomsplitter,
    webdataset,
)
from .archive import *  # noqa: F403
from .asyncmapper import *  # noqa: F403
from .bucketbatcher import *  # noqa: F403
from .combining import *  # noqa: F403
from .counting import *  # noqa: F403
from .fileio import *  # noqa: F403
from .forking import *  # noqa: F403
from .fsspec import *  # noqa: F403
from .httpreader import *  # noqa: F403
from .memory import *  # noqa: F403
from .ondiskcache import *  # noqa: F403
from .plain_text import *  # noqa: F403
from .randomsplitter import *  # noqa: F403
from .webdataset import *  # noqa: F403

__all__ += [name for module in (archive, asyncmapper, bucketbatcher, combining, counting, fileio,
                                forking, fsspec, httpreader, memory, ondiskcache, plain_text,
                                randomsplitter, webdataset)
            for name in module.__all__]

# optional-dependency readers (each needs its extra only when used)
from . import arrow, s3, tfrecord  # noqa: E402
from .arrow import *  # noqa: E402, F403
from .s3 import *  # noqa: E402, F403
from .tfrecord import *  # noqa: E402, F403

__all__ += [name for module in (arrow, s3, tfrecord) for name in module.__all__]
