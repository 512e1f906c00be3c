"""Compile rendered kernels for real GPUs without one: ``numba.cuda.compile_ptx`` (libnvvm)
then ``ptxas`` (both from NVIDIA's ``nvidia-cuda-nvcc-cu12`` wheel; numba-cuda also needs
``nvidia-cuda-nvrtc-cu12``). Must run where the simulator is off, so the test suite calls
``python -m functorch_core.backends.cuda.ptx sources.json`` in a subprocess; it prints one JSON
record per (kernel, target): registers per thread and spill bytes from ``ptxas -v``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .emit import namespace

TARGETS = ((8, 0), (9, 0))


def ptxas_path() -> str | None:
    """The ``ptxas`` of the installed nvidia-cuda-nvcc wheel (None: not installed)."""
    try:
        import nvidia.cuda_nvcc as nvcc
    except ImportError:
        return None
    for root in list(getattr(nvcc, "__path__", [])):
        p = Path(root) / "bin" / "ptxas"
        if p.exists():
            return str(p)
    return None


def compile_one(text, arg_dtypes, cc):
    """PTX text for one kernel source (see ``emit.Source``) at compute capability ``cc``."""
    import numba
    from numba import cuda

    ns = namespace(simulated=False)
    exec(compile(text, "<fc-cuda-kernel>", "exec"), ns)
    sig = tuple(numba.from_dtype(np.dtype(d))[::1] for d in arg_dtypes)
    ptx, _ = cuda.compile_ptx(ns["kernel"], sig, cc=cc)
    return ptx


def assemble(ptx, cc, ptxas):
    """``ptxas -v`` on ``ptx`` for ``sm_<cc>``: (registers per thread, spill store bytes,
    spill load bytes); raises CalledProcessError when it does not assemble."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        out = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(src), "-o",
                              str(Path(d) / "k.cubin")], capture_output=True, text=True,
                             check=True)
    info = out.stdout + out.stderr
    regs = re.search(r"Used (\d+) registers", info)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    return (int(regs.group(1)) if regs else None,
            int(spills.group(1)) if spills else None, int(spills.group(2)) if spills else None)


def compile_elsewhere(sources, timeout=900) -> list[dict]:
    """Compile ``sources`` (objects with ``text`` and ``arg_dtypes``, as ``emit.Source``)
    for every target in a fresh interpreter with the simulator off (``python -m
    functorch_core.backends.cuda.ptx``): one record per (kernel, target), kernels in the given
    order.
    Raises ``RuntimeError`` with the end of its stderr when that process fails."""
    root = str(Path(__file__).resolve().parents[2])
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "sources.json"
        path.write_text(json.dumps([{"text": s.text, "arg_dtypes": [str(t) for t in s.arg_dtypes]}
                                    for s in sources]))
        out = subprocess.run([sys.executable, "-m", "functorch_core.backends.cuda.ptx",
                              str(path)], env=env, cwd=root, capture_output=True, text=True,
                             timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"backends.cuda.ptx failed:\n{out.stderr[-3000:]}")
    return [json.loads(line) for line in out.stdout.splitlines()]


def main(path):
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        raise SystemExit("backends.cuda.ptx: run with NUMBA_ENABLE_CUDASIM unset")
    ptxas = ptxas_path()
    for i, src in enumerate(json.loads(Path(path).read_text())):
        for cc in TARGETS:
            ptx = compile_one(src["text"], src["arg_dtypes"], cc)
            regs, st, ld = assemble(ptx, cc, ptxas) if ptxas else (None, None, None)
            print(json.dumps({"kernel": i, "cc": f"sm_{cc[0]}{cc[1]}", "registers": regs,
                              "spill_stores": st, "spill_loads": ld}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
