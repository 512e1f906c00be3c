"""The reference interpreter: a NumPy implementation of every primitive.

``core`` holds the implementations (``IMPLS``) and ``run_graph``; ``linalg`` the linear
algebra; ``igamma_grad`` and ``betainc_grad`` the special functions' derivatives in their
parameters. Importing the package registers each implementation as its primitive's eager
``impl``.
"""

from .core import IMPLS, MISSING, run_graph, to_numpy_index

__all__ = ["IMPLS", "MISSING", "run_graph", "to_numpy_index"]
