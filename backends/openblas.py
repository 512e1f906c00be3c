"""Where NumPy's bundled ILP64 OpenBLAS lies (``numpy.libs/libscipy_openblas64_*``, or
``numpy/.dylibs``): the llvm backend binds its routines from it, and a stored export hands
its path to a shared library, without importing LLVM. Also who holds its thread count at
one: the llvm backend's gemm calls and the interpreter's products share one count."""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading

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


# ?gemm of every dtype: the library the backends take (NumPy's own, already loaded)
GEMM_NAMES = ("sgemm", "dgemm", "cgemm", "zgemm")
NUMPY_LIB: list = []     # [NumPy's OpenBLAS as a CDLL, or None] once looked for
# a product below 2^19 multiply-adds runs on OpenBLAS's calling thread by itself
OPENBLAS_THREADS_MACS = 1 << 19
# below 2^28 OpenBLAS's own threads gain at most 1.5x quiet and stall under load (see
# backends/llvm/blas.py and benchmarks/blas_under_load.py --sweep): one thread
ONE_THREAD_MACS = 1 << 28


def find_numpy_lib():
    """NumPy's bundled ILP64 OpenBLAS, the same library NumPy loaded (so dlopen only hands
    back its handle), when every ?gemm is there: a CDLL, or None."""
    for path in numpy_openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if all(hasattr(lib, f"scipy_{n}_64_") for n in GEMM_NAMES):
            return lib
    return None


def numpy_lib():
    """:func:`find_numpy_lib`, looked for once (``NUMPY_LIB``)."""
    if not NUMPY_LIB:
        NUMPY_LIB.append(find_numpy_lib())
    return NUMPY_LIB[0]


# who holds OpenBLAS at one thread: nested and concurrent holders share one count
THREADS = {"lock": threading.Lock(), "inside": 0, "saved": None, "hold": threading.Lock(),
           "held": False}


def one_thread(lib, delta):
    """One more (``delta`` 1) or one fewer (-1) holder of OpenBLAS's single thread; the
    last to leave puts the count back as the first found it (unless someone else changed
    it meanwhile: then theirs stays)."""
    with THREADS["lock"]:
        if THREADS["inside"] == 0 and delta > 0:
            THREADS["saved"] = lib.scipy_openblas_get_num_threads64_()
            if THREADS["saved"] != 1:
                lib.scipy_openblas_set_num_threads64_(1)
        THREADS["inside"] += delta
        if THREADS["inside"] == 0 and THREADS["saved"] != 1 and \
                lib.scipy_openblas_get_num_threads64_() == 1:
            lib.scipy_openblas_set_num_threads64_(THREADS["saved"])


class OneThread:
    """A context holding ``lib`` at one thread (a class, not a generator: it wraps every
    small product, where a generator-based context costs ~6 us a call)."""

    __slots__ = ("lib",)

    def __init__(self, lib):
        self.lib = lib

    def __enter__(self):
        one_thread(self.lib, 1)

    def __exit__(self, *exc):
        one_thread(self.lib, -1)


def _after_fork_in_child():
    """A forked child has only the forking thread: a lock another thread held stays held."""
    THREADS["lock"], THREADS["hold"] = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

_NOTHING = contextlib.nullcontext()
_eager: list = []


def eager_product(macs: int):
    """The context an eager (NumPy) product of ``macs`` multiply-adds runs in: NumPy's
    OpenBLAS held at one thread from OPENBLAS_THREADS_MACS up to ONE_THREAD_MACS, as the
    cpu backend runs its own gemm calls (on a busy machine OpenBLAS's threads wait on each
    other at barriers inside every call); a no-op outside that range or without NumPy's
    OpenBLAS."""
    if not OPENBLAS_THREADS_MACS <= macs < ONE_THREAD_MACS:
        return _NOTHING
    if not _eager:
        lib = numpy_lib()
        _eager.append(_NOTHING if lib is None else OneThread(lib))
    return _eager[0]
