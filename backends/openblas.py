"""Where NumPy's bundled ILP64 OpenBLAS lies (``numpy.libs/libscipy_openblas64_*``, or
``numpy/.dylibs``): the llvm backend binds its routines from it, and a stored export hands
its path to a shared library, without importing LLVM."""

from __future__ import annotations

import os

import numpy as np


def numpy_openblas_paths() -> list[str]:
    """The candidate files, in a fixed order (empty where NumPy bundles none)."""
    base = os.path.dirname(np.__file__)
    paths = []
    for folder in (base + ".libs", os.path.join(base, ".dylibs")):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        paths += [os.path.join(folder, n) for n in names if n.startswith("libscipy_openblas64_")]
    return paths
