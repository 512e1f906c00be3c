"""Start a script on several processes: ``python -m functorch_core.distributed.run``.

torchrun's role, on MPI: it runs ``mpiexec -n N [-f HOSTFILE] python SCRIPT ARGS`` with
the ``mpiexec`` beside this Python (the ``mpich`` wheel puts it in the venv), else the one
on PATH, forwards the environment, and exits with the job's exit status.

    python -m functorch_core.distributed.run -n 4 train.py --epochs 3
    python -m functorch_core.distributed.run --nproc-per-node 2 --hostfile hosts train.py

``-m module`` instead of a script runs a module, as ``python -m`` does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

INSTALL = "pip install 'functorch_core[distributed]'"


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this Python, else the one on PATH, else None."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m functorch_core.distributed.run",
        description="Run a training script on N processes under MPI (torchrun's role).")
    p.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="n", type=int,
                   default=1, help="how many processes (ranks) to start; default 1")
    p.add_argument("--hostfile", help="MPI hostfile: the machines to start them on "
                   "(passed to mpiexec as -f)")
    p.add_argument("-m", dest="module", action="store_true",
                   help="the target is a module to run as `python -m`")
    p.add_argument("script", help="the script (or module, with -m) to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def command(argv) -> list[str]:
    """The mpiexec command line for ``argv`` (this launcher's arguments)."""
    opts = _parser().parse_args(argv)
    if opts.n < 1:
        raise SystemExit(f"functorch_core.distributed.run: -n must be at least 1, "
                         f"got {opts.n}")
    exe = find_mpiexec()
    if exe is None:
        raise SystemExit(f"functorch_core.distributed.run: mpiexec was found neither beside "
                         f"{sys.executable} nor on PATH; install MPI with: {INSTALL}")
    cmd = [exe, "-n", str(opts.n)]
    if opts.hostfile is not None:
        if not os.path.exists(opts.hostfile):
            raise SystemExit(f"functorch_core.distributed.run: --hostfile {opts.hostfile}: "
                             f"no such file")
        cmd += ["-f", opts.hostfile]
    target = ["-m", opts.script] if opts.module else [opts.script]
    return [*cmd, sys.executable, *target, *opts.args]


def main(argv=None) -> int:
    """Run the job; its exit status (that of the first rank to fail, as mpiexec reports)."""
    cmd = command(sys.argv[1:] if argv is None else argv)
    try:
        return subprocess.call(cmd, env=dict(os.environ))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
