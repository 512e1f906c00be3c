"""Native code inside a saved export: the shared library ``compile_library`` builds, stored
in the file with the CPU it was built for, so that ``load_exported`` on a matching machine
calls it without tracing, lowering or LLVM (the first call of a loaded export costs a
``dlopen`` instead of a compile).

A machine *matches* when it has the same architecture and operating system and every CPU
flag of the building machine (``/proc/cpuinfo``): the code was compiled for that CPU's
features, all of which are among its flags. Elsewhere, or when the library cannot start
(its BLAS cannot be opened), the export compiles as before and says why once.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import sys
import tempfile
import warnings

import numpy as np

from functorch_core.backends.openblas import numpy_openblas_paths

_RC = {3: (MemoryError, "the library could not allocate its scratch memory"),
       4: (IndexError, "an integer index was out of bounds (NumPy raises IndexError there)"),
       5: (np.linalg.LinAlgError, "a matrix is singular or not positive definite"),
       6: (np.linalg.LinAlgError, "svd, eigh or eig did not converge (or eig's operand "
                                  "holds infs or NaNs)")}


def host_flags() -> frozenset | None:
    """This CPU's feature flags (Linux's ``/proc/cpuinfo``), or None where unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def machine() -> dict:
    return {"arch": platform.machine(), "os": sys.platform,
            "flags": sorted(host_flags() or ())}


def build(exported, name: str) -> bytes | None:
    """The shared library of ``exported`` (an ``Exported``) with its entry called ``name``,
    or None when it cannot be one here: dynamic dimensions, a step that is not native
    code, no C compiler, no ``/proc/cpuinfo`` to record the CPU by."""
    if exported.dynamic or host_flags() is None or \
            shutil.which(os.environ.get("CC", "cc")) is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lib.so")
        try:
            exported.compile_library(path, name, header=os.path.join(d, "lib.h"))
        except (NotImplementedError, RuntimeError, ValueError):
            return None     # not native code here (named by compile_library), or no cc
        except Exception as err:    # the file is still saved, without it
            warnings.warn(f"exported {exported.name}: the native code could not be built "
                          f"({type(err).__name__}: {err}); the saved file compiles on load",
                          RuntimeWarning, stacklevel=3)
            return None
        with open(path, "rb") as f:
            return f.read()


def mismatch(recorded: dict) -> str | None:
    """Why this machine cannot run code built on ``recorded`` (a :func:`machine`), or None."""
    here = machine()
    if (recorded.get("arch"), recorded.get("os")) != (here["arch"], here["os"]):
        return (f"it was built on {recorded.get('arch')}/{recorded.get('os')}, this is "
                f"{here['arch']}/{here['os']}")
    missing = sorted(set(recorded.get("flags", ())) - set(here["flags"]))
    if missing:
        return f"this CPU lacks {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}"
    return None


class Library:
    """The stored library, loaded: ``lib(arrays)`` -> the flat results, or an exception."""

    def __init__(self, data: bytes, name: str, out_avals, what: str, explain=None):
        self.what, self.out_avals = what, [(tuple(a.shape), a.dtype) for a in out_avals]
        self.explain = explain      # runs the graph elsewhere to raise the precise error
        # dlopen knows a library by its path: the digest names it, so another library never
        # gets the path of one already loaded (the same bytes may: they are the same code)
        digest = hashlib.sha256(data).hexdigest()[:32]
        with tempfile.TemporaryDirectory(prefix="functorch_core-export-") as d:
            path = os.path.join(d, f"fcx-{digest}.so")
            with open(path, "wb") as f:
                f.write(data)
            self._lib = ctypes.CDLL(path)
        self._fn = getattr(self._lib, name)
        self._fn.restype = ctypes.c_int
        init = getattr(self._lib, f"{name}_init")
        init.restype = ctypes.c_int
        # the BLAS path recorded at build time, else the one of this process's NumPy
        here = numpy_openblas_paths()
        if init(None) != 0 and init(here[0].encode() if here else None) != 0:
            raise OSError("the library cannot open an ILP64 OpenBLAS (NumPy's bundled one)")

    def __call__(self, arrays):
        ins = [np.asarray(a, order="C") for a in arrays]
        outs = [np.empty(s, d) for s, d in self.out_avals]
        iv = (ctypes.c_void_p * max(len(ins), 1))(*[a.ctypes.data for a in ins])
        ov = (ctypes.c_void_p * max(len(outs), 1))(*[a.ctypes.data for a in outs])
        rc = self._fn(iv, ov)
        if rc:
            if rc in (4, 5, 6) and self.explain is not None:
                self.explain(ins)       # NumPy's error, naming the index and the user's line
            err, why = _RC.get(rc, (RuntimeError, f"the library returned {rc}"))
            raise err(f"{self.what}: {why}")
        return outs


def load(header: dict, raw: list, out_avals, what: str, explain=None) -> Library | None:
    """The export's stored library, when it has one and this machine runs it; else None,
    with a warning saying why (once per load). ``explain(arrays)``, called when the
    library reports a bad index or matrix, raises the detailed error."""
    meta = header.get("native")
    if not meta:
        return None
    why = mismatch(meta["machine"])
    if why is None:
        try:
            return Library(raw[meta["array"]], meta["name"], out_avals, what, explain)
        except (OSError, AttributeError) as err:
            why = f"it does not load here ({err})"
    warnings.warn(f"{what}: not using the native code stored in the file ({why}); compiling "
                  "it instead", RuntimeWarning, stacklevel=3)
    return None
