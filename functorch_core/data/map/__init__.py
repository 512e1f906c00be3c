"""Map-style DataPipes, grouped by family as TorchData groups them.

Each family module lists its pipes in ``__all__``; add a family with one import line.
"""

from . import callable, combinatorics, grouping, util
from .callable import *  # noqa: F403
from .combinatorics import *  # noqa: F403
from .grouping import *  # noqa: F403
from .util import *  # noqa: F403

__all__ = [name for module in (callable, combinatorics, grouping, util)
           for name in module.__all__]

from . import combining
from .combining import *  # noqa: F403

__all__ += combining.__all__
