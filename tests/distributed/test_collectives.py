"""functorch_core.distributed's collectives on real ranks (1, 2, 3) against NumPy on the
ranks' inputs rebuilt on every rank; mismatched inputs; a collective that times out."""

import datetime
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from functorch_core.backends import mpi
from mpirun import needs_mpi, run_ranks

import functorch_core.distributed as dist

HERE = Path(__file__).parent
ENV = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}

CHECKS = '''
    import sys
    import functorch_core.distributed as dist
    import _collective_checks as c
    dist.init(timeout=float(sys.argv[1]) if sys.argv[1] != "none" else None)
    dist.init_process_group("mpi", world_size=dist.world_size(), rank=dist.rank())
    try:
        dist.init_process_group("mpi", world_size=dist.world_size() + 1)
    except ValueError as e:
        report(["init_process_group", str(e)])
    report(["names", [dist.get_rank() == dist.rank(), dist.get_world_size(),
                      dist.is_initialized(), 0 <= dist.local_rank() < dist.world_size()]])
    c.run_all(report)
    c.mismatches(report)
    if sys.argv[2:] == ["graph"]:
        c.in_graph(report)
'''


def _check(out, n):
    for r in range(n):
        reports = dict(map(tuple, out[r]))
        assert reports["checks"] > 0
        assert reports["after"] == float(n)
        assert reports["names"] == [True, n, True, True]
        assert reports["init_process_group"] == (
            f"init_process_group(world_size={n + 1}): MPI started this process with "
            f"world_size {n}")
        assert n != 2 or reports["in_graph"] == ["all_reduce(op='prod') inside jit/grad/vmap",
                                       "broadcast(src=0) inside jit/grad/vmap"]
        if n == 1:
            continue
        last = f"rank {n - 1}"
        others = "rank 0" if n == 2 else "ranks 0, 1"
        assert reports["shape"].startswith("all_reduce(op='sum'): leaf ['b'] differs across "
                                           "ranks: ")
        assert f"{others}: float64[4]; {last}: float64[5]" in reports["shape"]
        assert f"{others}: float64[4]; {last}: float32[4]" in reports["dtype"]
        assert f"leaf ['c'] is in {last} only" in reports["structure"]
        assert "the ranks made different calls" in reports["op"]
        assert f"{others}: all_reduce(op='sum'); {last}: all_reduce(op='max')" in reports["op"]
        assert "leaf ['b'] differs" in reports["leaf"] and "not an array: str" in reports["leaf"]
        assert "float64[2, 2]" in reports["all_gather"] and "float64[2, 3]" in \
            reports["all_gather"]
        assert f"this is rank {r} of {n}" in reports["shape"]
        if r == 1:
            assert "recv(src=0, tag=9): what rank 0 sent differs from `like`" in \
                reports["recv"]
            assert "`like`: float64[4]; rank 0's tree: float64[3]" in reports["recv"]


def test_world_of_one_without_mpi():
    # a child process: MPI must not start in the pytest process (forked workers inherit it)
    src = "def report(v): print(repr(v))\n" + textwrap.dedent(CHECKS)
    res = subprocess.run([sys.executable, "-c", src, "none"], capture_output=True,
                         text=True, timeout=120, cwd=HERE,
                         env={**os.environ, **ENV, "FUNCTORCH_CORE_NO_MPI": "1"})
    assert res.returncode == 0, res.stderr
    _check([[eval(line) for line in res.stdout.splitlines()]], 1)


@needs_mpi
@pytest.mark.parametrize(("n", "timeout"), [(1, "none"), (2, "none"), (3, "30")])
def test_collectives_against_numpy(n, timeout):
    # 3 ranks with a timeout: every collective goes through MPI's non-blocking calls
    # jit of the collectives (lax.parallel's, compiled) on 2 ranks only: compiling is slow
    out = run_ranks(CHECKS, n=n, timeout=150, args=[timeout, "graph" if n == 2 else ""],
                    env=ENV)
    _check(out, n)


@needs_mpi
def test_a_jitted_collective_times_out_too():
    # under a timeout a compiled step's collective is the bounded call, not a native
    # MPI_Allreduce that would wait for ever for a rank that never calls it
    out = run_ranks('''
        import time
        import numpy as np
        import functorch_core as fc
        import functorch_core.distributed as dist
        dist.init(timeout=1.0)
        step = fc.jit(lambda x: dist.all_reduce(x * 2.0))
        report(step(np.ones(3)).tolist())          # both ranks: it works
        if dist.rank() == 0:
            t = time.monotonic()
            try:
                step(np.ones(3))
            except dist.DistributedTimeoutError as e:
                report([time.monotonic() - t, str(e)])
    ''', n=2, timeout=60)
    assert out[0][0] == out[1][0] == [4.0, 4.0, 4.0]
    elapsed, msg = out[0][1]
    assert 1.0 <= elapsed < 3.0
    assert "did not complete within 1 s on rank 0 of 2: rank 1 did not reach it" in msg


@needs_mpi
def test_collective_on_one_rank_times_out():
    out = run_ranks('''
        import time
        import numpy as np
        import functorch_core.distributed as dist
        dist.init(timeout=1.0)
        dist.all_reduce(np.ones(2))          # both ranks: the world works
        if dist.rank() == 0:
            t = time.monotonic()
            try:
                dist.all_reduce({"w": np.ones(3), "b": np.ones(2, np.float32)})
            except dist.DistributedTimeoutError as e:
                report([time.monotonic() - t, str(e)])
            try:
                dist.broadcast(np.ones(2))
            except dist.DistributedError as e:
                report(str(e))
    ''', n=2, timeout=60)
    elapsed, msg = out[0][0]
    assert 1.0 <= elapsed < 3.0
    assert msg.startswith("all_reduce(op='sum') (leaves ['b'], ['w']) did not complete within "
                          "1 s on rank 0 of 2: rank 1 did not reach it")
    assert "the world is unusable" in msg
    assert out[0][1].startswith("broadcast(src=0): the world is unusable since all_reduce")
    assert out[1] == []


def test_timeouts_and_reduce_op_names():
    # no world is joined here: these are the argument conversions only
    assert mpi.seconds(datetime.timedelta(milliseconds=1500)) == 1.5
    assert mpi.seconds(2) == 2.0 and mpi.seconds(None) is None
    for bad in (0, -1.0, "3", True):
        with pytest.raises(ValueError, match=r"init\(timeout="):
            mpi.seconds(bad)
    assert [op.value for op in dist.ReduceOp] == ["sum", "prod", "max", "min", "mean"]
    assert dist.ReduceOp.AVG == "mean"
    with pytest.raises(ValueError, match="op must be one of"):
        dist.all_reduce(1.0, op="avg")
