"""Data across real ranks (DataLoader's rank from init(), FullSync, DistributedSampler),
the launcher, and collectives as profiler events."""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from mpirun import needs_mpi, run_ranks

from functorch_core.data import DistributedSampler
from functorch_core.data import distributed as data_distributed
from functorch_core.distributed import run as launcher


def torch_documented(n, replicas, rank, shuffle, seed, epoch, drop_last):
    """torch's DistributedSampler algorithm, written out from its documentation (our
    permutation is NumPy's)."""
    order = list(np.random.default_rng(seed + epoch).permutation(n)) if shuffle \
        else list(range(n))
    if drop_last and n % replicas:
        per = math.ceil((n - replicas) / replicas)
    else:
        per = math.ceil(n / replicas)
    total = per * replicas
    while len(order) < total:           # pad by repeating from the start
        order += order[:total - len(order)]
    order = order[:total]
    return [int(i) for i in order[rank::replicas]]


@pytest.mark.parametrize(("n", "replicas"), [(10, 3), (9, 3), (2, 5), (1, 1), (0, 2), (7, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_follows_torchs_algorithm(n, replicas, drop_last, shuffle):
    for epoch in (0, 3):
        seen = []
        for rank in range(replicas):
            s = DistributedSampler(range(n), num_replicas=replicas, rank=rank,
                                   shuffle=shuffle, seed=5, drop_last=drop_last)
            s.set_epoch(epoch)
            got = list(s)
            assert got == torch_documented(n, replicas, rank, shuffle, 5, epoch, drop_last)
            assert len(got) == len(s)
            seen += got
        if n:
            # every index at least once without drop_last; never more than once with it
            assert set(seen) == set(range(n)) if not drop_last else len(set(seen)) == len(seen)


def test_distributed_sampler_cases_by_hand():
    assert list(DistributedSampler(range(10), 3, 1, shuffle=False)) == [1, 4, 7, 0]
    assert list(DistributedSampler(range(10), 3, 2, shuffle=False, drop_last=True)) == [2, 5, 8]
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False)) == [0]
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval "
                                         r"\[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


def test_ranks_default_without_a_world():
    assert data_distributed.ranks(None, None) == (0, 1)
    assert data_distributed.ranks(1, 2) == (1, 2)


LOADERS = '''
    import numpy as np
    import functorch_core.distributed as dist
    from functorch_core.data import DataLoader, DistributedSampler, IterableWrapper
    dist.init(timeout=60)
    r = dist.rank()
    # iterable pipe, 2 workers per rank, shuffled; rank and world size from init()
    dp = IterableWrapper(range(37)).shuffle().sharding_filter()
    loader = DataLoader(dp, batch_size=4, num_workers=2, seed=11,
                        multiprocessing_context="fork")
    report(["ranks", loader.rank, loader.world_size])
    for epoch in range(2):
        report(["iter", epoch, [int(x) for b in loader for x in b]])
    # map-style, the loader's own shuffled sampler, 2 workers
    ml = DataLoader(list(range(23)), batch_size=5, shuffle=True, seed=4, num_workers=2,
                    multiprocessing_context="fork")
    report(["map", [int(x) for b in ml for x in b]])
    # map-style with a DistributedSampler: the loader does not split it again
    s = DistributedSampler(list(range(11)), seed=2)
    s.set_epoch(1)
    sl = DataLoader(list(range(11)), batch_size=2, sampler=s)
    report(["sampler", s.num_replicas, s.rank, [int(x) for b in sl for x in b], len(sl)])
    # FullSync: rank 1 keeps fewer items, through a filter (no len()); both stop together
    keep = (lambda x: x < 12) if r == 1 else (lambda x: True)
    for workers in (0, 2):
        fs = IterableWrapper(range(20)).sharding_filter().filter(keep).fullsync()
        fl = DataLoader(fs, num_workers=workers, multiprocessing_context="fork")
        for epoch in range(2):
            report(["fullsync", workers, epoch, [int(x) for x in fl]])
    report(["after", float(dist.all_reduce(np.ones(())))])
'''


@needs_mpi
def test_loaders_on_two_ranks():
    out = run_ranks(LOADERS, n=2, timeout=150)
    by = [{} for _ in range(2)]
    for r in range(2):
        for rec in out[r]:
            by[r].setdefault(rec[0], []).append(rec[1:])
    for r in range(2):
        assert by[r]["ranks"] == [[r, 2]]
        assert by[r]["after"] == [[2.0]]
    # exactly once across ranks and workers, shuffled, and another order the next epoch
    epochs = []
    for epoch in range(2):
        items = [by[r]["iter"][epoch][1] for r in range(2)]
        assert sorted(items[0] + items[1]) == list(range(37))
        assert not set(items[0]) & set(items[1])
        epochs.append(items)
    assert epochs[0][0] + epochs[0][1] != sorted(epochs[0][0] + epochs[0][1])
    assert epochs[0] != epochs[1]
    ms = [by[r]["map"][0][0] for r in range(2)]
    assert sorted(ms[0] + ms[1]) == list(range(23)) and ms[0] + ms[1] != list(range(23))
    for r in range(2):
        replicas, rank, got, length = by[r]["sampler"][0]
        assert (replicas, rank) == (2, r)
        assert got == torch_documented(11, 2, r, True, 2, 1, False)
        assert length == 3      # 6 indices in batches of 2
    # FullSync: of the 20 numbers sharded over the instances, rank 0 holds 10 and rank 1
    # keeps the 6 of its 10 below 12: both deliver 6 items, each epoch, with and without
    # workers (and the collective after the loops completes)
    for workers in (0, 2):
        for epoch in range(2):
            got = [next(x[2] for x in by[r]["fullsync"] if x[:2] == [workers, epoch])
                   for r in range(2)]
            assert len(got[0]) == len(got[1]) == 6, got
            assert not set(got[0]) & set(got[1]) and max(got[1]) < 12


@needs_mpi
def test_profiler_events_and_one_trace_file_per_rank(tmp_path):
    out = run_ranks(f'''
        import json, numpy as np
        import functorch_core as fc, functorch_core.distributed as dist
        dist.init()
        with fc.profiler.profile() as prof:
            dist.all_reduce({{"w": np.ones((4, 8), np.float32), "b": np.ones(8)}}, op="mean")
            dist.broadcast(np.ones(3, np.int32), src=1)
        evs = [(e.name, e.cat, e.args) for e in prof.events() if e.cat == "collective"]
        report(evs)
        report("all_reduce" in prof.key_averages().table())
        prof.export_chrome_trace({str(tmp_path)!r})
    ''', n=2, timeout=60)
    for r in range(2):
        evs, in_table = out[r]
        assert in_table
        assert evs[0] == ["all_reduce", "collective", {"op": "mean", "bytes": 4 * 32 + 8 * 8,
                          "dtype": "float32,float64", "leaves": 2, "ranks": 2, "rank": r}]
        assert evs[1][0] == "broadcast" and evs[1][2]["bytes"] == 12
        trace = json.loads((tmp_path / f"trace.rank{r}.json").read_text())
        names = [e["name"] for e in trace["traceEvents"]]
        assert "all_reduce" in names and "broadcast" in names
        assert {"name": f"rank {r}"} in [e.get("args") for e in trace["traceEvents"]
                                          if e["name"] == "process_name"]


@needs_mpi
def test_launcher_runs_two_ranks_and_forwards_args_and_status(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent('''
        import os, sys
        import functorch_core.distributed as dist
        dist.init()
        with open(os.path.join(os.path.dirname(__file__), f"rank{dist.rank()}.txt"), "w") as f:
            f.write(f"rank {dist.rank()} of {dist.world_size()} {sys.argv[1:]} "
                    f"{os.environ.get('FC_LAUNCH_PROBE')}")
        dist.barrier()
        sys.exit(int(sys.argv[1]) if dist.rank() == 1 else 0)
    '''))
    env = {**os.environ, "FC_LAUNCH_PROBE": "forwarded"}
    for status in (0, 3):
        res = subprocess.run([sys.executable, "-m", "functorch_core.distributed.run",
                              "--nproc-per-node", "2", str(script), str(status), "--lr", "1"],
                             capture_output=True, text=True, timeout=60, env=env)
        assert res.returncode == status, res.stdout + res.stderr
        for r in range(2):   # a file per rank: the ranks' stdout lines may interleave
            assert (tmp_path / f"rank{r}.txt").read_text() == \
                f"rank {r} of 2 ['{status}', '--lr', '1'] forwarded"


def test_launcher_command_line(monkeypatch, tmp_path):
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: "/x/mpiexec")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    assert launcher.command(["-n", "4", "--hostfile", str(hosts), "t.py", "-n", "1"]) == [
        "/x/mpiexec", "-n", "4", "-f", str(hosts), sys.executable, "t.py", "-n", "1"]
    assert launcher.command(["-m", "pkg.train"])[-2:] == ["-m", "pkg.train"]
    with pytest.raises(SystemExit, match="no such file"):
        launcher.command(["--hostfile", str(tmp_path / "missing"), "t.py"])
    with pytest.raises(SystemExit, match="must be at least 1"):
        launcher.command(["-n", "0", "t.py"])
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: None)
    with pytest.raises(SystemExit, match=r"pip install 'functorch_core\[distributed\]'"):
        launcher.command(["-n", "2", "t.py"])
