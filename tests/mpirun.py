"""Run a script on several real MPI ranks (``mpiexec -n K``), bounded by a timeout.

A script reports to the test by calling ``report(value)`` (JSON-able); ``run_ranks``
returns each rank's reports in rank order. A rank that fails, or a job that runs past
its timeout, fails the test with every rank's output; the job is killed, never left behind.

    from mpirun import run_ranks
    out = run_ranks('''
        import numpy as np, functorch_core.distributed as dist
        dist.init()
        report(float(dist.all_reduce(np.ones(2))[0]))
    ''', n=2)
    assert out == [[2.0], [2.0]]
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

_PRELUDE = '''\
import json as _json, os as _os
def report(value):
    rank = int(_os.environ.get("PMI_RANK", _os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    with open(_os.path.join(_os.environ["FC_TEST_REPORTS"], f"{rank}.jsonl"), "a") as f:
        f.write(_json.dumps(value) + "\\n")
'''


def mpiexec() -> str | None:
    """The mpiexec beside this Python (MPICH's wheel puts it in the venv), or on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def have_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return mpiexec() is not None


needs_mpi = pytest.mark.skipif(not have_mpi(), reason="needs mpi4py and mpiexec "
                               "(pip install -e '.[distributed]')")


def bounded(proc, timeout: float, what: str) -> str:
    """The output of ``proc`` (started with ``start_new_session=True``, stdout piped) once
    it ends; past ``timeout`` seconds its whole process group is killed and the test fails
    with that output, naming ``what`` ran too long."""
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"{what} ran past {timeout} s:\n{output}")
    return output


def run_ranks(source: str, n: int = 2, timeout: float = 120, args=(), env=None,
              expect_fail: bool = False, cwd=None):
    """Run ``source`` (a script's text) on ``n`` ranks; return each rank's reports.

    With ``expect_fail`` the job must exit non-zero; the result is then
    ``(reports, output)``, the combined stdout and stderr.
    """
    with tempfile.TemporaryDirectory(prefix="fc-mpi-") as tmp:
        script = Path(tmp) / "script.py"
        script.write_text(_PRELUDE + textwrap.dedent(source))
        reports = Path(tmp) / "reports"
        reports.mkdir()
        full_env = {**os.environ, "FC_TEST_REPORTS": str(reports), "OMP_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
        cmd = [mpiexec(), "-n", str(n), sys.executable, str(script), *map(str, args)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=full_env, cwd=cwd, start_new_session=True, text=True)
        output = bounded(proc, timeout, f"{n} ranks")
        out = [[json.loads(line) for line in (reports / f"{r}.jsonl").read_text().splitlines()]
               if (reports / f"{r}.jsonl").exists() else [] for r in range(n)]
        if expect_fail:
            assert proc.returncode != 0, f"expected a failure, the job passed:\n{output}"
            return out, output
        assert proc.returncode == 0, f"exit status {proc.returncode}:\n{output}"
        return out
