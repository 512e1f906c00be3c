"""Start a script on several processes: ``python -m functorch_core.distributed.run``.

torchrun's role, on MPI: it runs ``mpiexec -n N [-f HOSTFILE] python SCRIPT ARGS`` with
the ``mpiexec`` beside this Python (the ``mpich`` wheel puts it in the venv), else the one
on PATH, forwards the environment, and exits with the job's exit status.

    python -m functorch_core.distributed.run -n 4 train.py --epochs 3
    python -m functorch_core.distributed.run --nproc-per-node 2 --hostfile hosts train.py

``-m module`` instead of a script runs a module, as ``python -m`` does.

Elastic runs (torchrun's ``--max-restarts``): when the job fails (a rank exits non-zero, is
killed by a signal or the OOM killer, or a bounded collective times out, which ends the
job by ``MPI_Abort``), every process of the job is killed (it runs in its own process
group) and the job is started again, at most ``--max-restarts`` times; the script finds
the restart's number in ``FUNCTORCH_CORE_RESTART_COUNT`` and resumes from
``functorch_core.distributed.checkpoint.load_latest``. With ``--nproc-file`` the number of
processes of each restart is read from that file (the slots that remain), and the job
runs on fewer ranks down to ``--min-nproc``.

    python -m functorch_core.distributed.run -n 4 --max-restarts 3 --min-nproc 2 train.py
"""

from __future__ import annotations

import argparse
import array
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int,
                   default=0, help="how many times to restart the job after a failure; "
                   "default 0")
    p.add_argument("--min-nproc", dest="min_nproc", type=int, default=None,
                   help="the fewest processes a restart may run on (with --nproc-file); "
                   "default: -n")
    p.add_argument("--nproc-file", dest="nproc_file", help="a file holding how many "
                   "processes the next restart may run (the slots that remain)")
    p.add_argument("--watchdog", type=float, default=None, metavar="SECONDS",
                   help="name a rank that has not reached the collective the others wait in "
                   "for SECONDS (ranks of this machine; eager collectives)")
    p.add_argument("-m", dest="module", action="store_true",
                   help="the target is a module to run as `python -m`")
    p.add_argument("script", help="the script (or module, with -m) to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def _fail(why: str):
    raise SystemExit(f"functorch_core.distributed.run: {why}")


def _options(argv):
    opts = _parser().parse_args(argv)
    if opts.max_restarts < 0:
        _fail(f"--max-restarts must be at least 0, got {opts.max_restarts}")
    if opts.watchdog is not None and not opts.watchdog > 0:
        _fail(f"--watchdog must be a positive number of seconds, got {opts.watchdog}")
    if opts.min_nproc is not None and not 1 <= opts.min_nproc <= opts.n:
        _fail(f"--min-nproc must be in [1, -n={opts.n}], got {opts.min_nproc}")
    return opts


def command(argv, n: int | None = None) -> list[str]:
    """The mpiexec command line for ``argv`` (this launcher's arguments), on ``n``
    processes (default: ``-n``)."""
    opts = _options(argv)
    if n is not None:
        opts.n = n
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


class _Stopped(Exception):
    """The launcher got SIGTERM."""


def _stop(signum, frame):
    raise _Stopped


def _slots(opts, n: int) -> int:
    """How many processes the next restart may run: ``--nproc-file``'s number, else ``n``."""
    if opts.nproc_file is None:
        return n
    try:
        with open(opts.nproc_file) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError) as e:
        _fail(f"--nproc-file {opts.nproc_file}: expected a number of processes: {e}")


def _kill_group(proc) -> None:
    """End every process of the job (its own process group), then reap mpiexec."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _watch(proc, path: str, n: int, seconds: float) -> int:
    """``proc.wait()``, naming (once per lag) a rank whose count of collectives in the
    watchdog file ``path`` stays behind the others' for ``seconds``: the others wait for it
    in a collective it has not reached."""
    prev, since, told = [0] * n, [time.monotonic()] * n, set()
    while True:
        try:
            return proc.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            pass
        counts = array.array("q")
        with open(path, "rb") as f:
            counts.frombytes(f.read(8 * n))
        now, top = time.monotonic(), max(counts)
        for r, c in enumerate(counts):
            if c != prev[r]:
                prev[r], since[r] = c, now
            elif c < top and now - since[r] > seconds and (r, c) not in told:
                told.add((r, c))
                ahead = [q for q in range(n) if counts[q] == top]
                _say(f"watchdog: rank {r} has not reached collective {c + 1} for "
                     f"{now - since[r]:.1f} s, while rank{'s' * (len(ahead) > 1)} "
                     f"{', '.join(map(str, ahead))} wait{'s' * (len(ahead) == 1)} in "
                     f"collective {top}: rank {r} straggles")


def _say(text: str) -> None:
    print(f"functorch_core.distributed.run: {text}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    """Run the job, restarting it after a failure up to ``--max-restarts`` times; the exit
    status of its last run (that of the first rank to fail, as mpiexec reports), 130 on
    Ctrl-C or SIGTERM."""
    argv = sys.argv[1:] if argv is None else argv
    opts = _options(argv)
    n, restart = opts.n, 0
    floor = opts.n if opts.min_nproc is None else opts.min_nproc
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            env = {**os.environ, "FUNCTORCH_CORE_RESTART_COUNT": str(restart),
                   "FUNCTORCH_CORE_MAX_RESTARTS": str(opts.max_restarts)}
            start = time.monotonic()
            with tempfile.NamedTemporaryFile(prefix="fc-watchdog-") as beats:
                if opts.watchdog is not None:
                    beats.write(bytes(8 * n))
                    beats.flush()
                    env["FUNCTORCH_CORE_WATCHDOG"] = beats.name
                proc = subprocess.Popen(command(argv, n), env=env, start_new_session=True)
                try:
                    rc = proc.wait() if opts.watchdog is None else \
                        _watch(proc, beats.name, n, opts.watchdog)
                finally:
                    _kill_group(proc)
            if rc == 0:
                return 0
            why = f"exit status {rc}" if rc > 0 else f"signal {-rc}"
            if restart >= opts.max_restarts:
                if opts.max_restarts:
                    _say(f"the job failed ({why}) after {restart} restarts; giving up")
                return rc if rc > 0 else 128 - rc
            slots = _slots(opts, n)
            if slots < floor:
                _say(f"the job failed ({why}); {slots} slots remain, fewer than "
                     f"{'--min-nproc' if opts.min_nproc else '-n'} {floor}; giving up")
                return rc if rc > 0 else 128 - rc
            restart += 1
            _say(f"the job failed ({why}) after {time.monotonic() - start:.1f} s; restart "
                 f"{restart} of {opts.max_restarts} on {min(slots, opts.n)} processes")
            n = min(slots, opts.n)
    except (KeyboardInterrupt, _Stopped):
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
