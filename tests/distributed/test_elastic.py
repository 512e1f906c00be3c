"""Fault tolerance end to end (issue 31): the elastic launcher restarts a job whose rank
died, the job resumes from its last complete checkpoint, and every sample of an epoch is
consumed exactly once across ranks and restarts. Every job is real processes under
``python -m functorch_core.distributed.run`` (elastic_train.py), bounded by a timeout."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from functorch_core.backends import mpi
from mpirun import bounded, needs_mpi, run_ranks

from functorch_core.distributed import checkpoint as dc
from functorch_core.distributed import run as launcher

HERE = Path(__file__).parent
SCRIPT = HERE / "elastic_train.py"
JOIN = HERE / "elastic_join.py"
SAMPLES, EPOCHS = 40, 2
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _launch(tmp, n=3, job=(), launch=(), timeout=60, samples=SAMPLES, script=SCRIPT):
    """Run elastic_train.py under the launcher; ``(exit status, output, log folder)``."""
    log = tmp / "log"
    log.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "functorch_core.distributed.run", "-n", str(n), *launch,
           str(script), "--dir", str(tmp / "ckpt"), "--log", str(log),
           "--samples", str(samples), "--epochs", str(EPOCHS), *job]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **ENV}, start_new_session=True)
    out = bounded(proc, timeout, "the job")
    return proc.returncode, out, log


def _exactly_once(log, samples=SAMPLES):
    """Each epoch's ids, counted from each run's resumed step on (up to the step the next
    run resumed from), over every rank: each id once."""
    runs = sorted(int(p.stem.split("-")[1]) for p in log.glob("resumed-*.json"))
    starts = [json.loads((log / f"resumed-{k}.json").read_text())["step"] for k in runs]
    epochs: dict[int, Counter] = {}
    for k in runs:
        end = starts[k + 1] if k + 1 < len(runs) else float("inf")
        for path in log.glob(f"consumed-*-{k}.jsonl"):
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                if starts[k] < rec["step"] <= end:
                    epochs.setdefault(rec["epoch"], Counter()).update(rec["ids"])
    assert sorted(epochs) == list(range(EPOCHS))
    for e, seen in epochs.items():
        assert seen == Counter(range(samples)), f"epoch {e}: {seen - Counter(range(samples))}"
    return starts


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The final parameters of an uninterrupted 3-rank run, and its checkpoint folder."""
    tmp = tmp_path_factory.mktemp("ref")
    rc, out, log = _launch(tmp)
    assert rc == 0, out
    _exactly_once(log)
    return {"final": np.load(log / "final.npy"), "ckpt": tmp / "ckpt"}


@needs_mpi
@pytest.mark.parametrize("seed", [0, 1])
def test_kill_9_at_a_random_step_restarts_and_ends_as_the_uninterrupted_run(
        tmp_path, reference, seed):
    rng = np.random.default_rng(seed)
    rank, step = int(rng.integers(0, 3)), int(rng.integers(2, 10))   # of 10 steps
    rc, out, log = _launch(tmp_path, job=["--kill", f"{rank}:{step}"],
                           launch=["--max-restarts", "2"])
    assert rc == 0, out
    assert "restart 1 of 2 on 3 processes" in out
    starts = _exactly_once(log)
    assert starts == [0, (step - 1) // 2 * 2]       # the last checkpoint before the kill
    np.testing.assert_array_equal(np.load(log / "final.npy"), reference["final"])


@needs_mpi
def test_resume_where_one_rank_had_used_up_its_share_of_the_epoch(tmp_path):
    # 43 samples on 2 ranks: shares of 22 and 21, 8 and 7 batches of 3; at the step-8
    # checkpoint rank 1's loader has ended the epoch and rank 0's has not
    rc, out, log = _launch(tmp_path / "ref", n=2, samples=43)
    assert rc == 0, out
    rc, out, log2 = _launch(tmp_path / "killed", n=2, samples=43, job=["--kill", "0:9"],
                            launch=["--max-restarts", "1"])
    assert rc == 0, out
    assert _exactly_once(log2, samples=43) == [0, 8]
    np.testing.assert_array_equal(np.load(log2 / "final.npy"), np.load(log / "final.npy"))


@needs_mpi
def test_kill_during_a_checkpoint_write_resumes_from_the_previous_one(tmp_path, reference):
    rc, out, log = _launch(tmp_path, job=["--kill-in-save", "2:8"],
                           launch=["--max-restarts", "1"])
    assert rc == 0, out
    assert _exactly_once(log) == [0, 6]
    np.testing.assert_array_equal(np.load(log / "final.npy"), reference["final"])
    assert not [p for p in os.listdir(tmp_path / "ckpt") if p.endswith(".partial")]


@needs_mpi
def test_restart_from_3_ranks_to_2_delivers_the_rest_exactly_once(tmp_path):
    slots = tmp_path / "slots"
    slots.write_text("2\n")
    rc, out, log = _launch(tmp_path, job=["--kill", "2:7"], launch=[
        "--max-restarts", "1", "--min-nproc", "2", "--nproc-file", str(slots)])
    assert rc == 0, out
    assert "restart 1 of 1 on 2 processes" in out
    assert _exactly_once(log) == [0, 6]
    assert json.loads((log / "resumed-1.json").read_text())["world_size"] == 2
    assert sorted(p.name for p in log.glob("consumed-*-1.jsonl")) == [
        "consumed-0-1.jsonl", "consumed-1-1.jsonl"]
    # (2 ranks take 6 samples a step, not 9: another trajectory, so no comparison of the
    # parameters with the 3-rank run's)
    assert np.isfinite(np.load(log / "final.npy")).all()


@needs_mpi
@pytest.mark.parametrize("kill, resumed", [("0:5", 4), ("1:3", 2), ("0:11", 10)])
def test_join_on_uneven_inputs_across_a_restart_ends_as_the_uninterrupted_run(
        tmp_path, kill, resumed):
    # elastic_join.py: rank r takes batches of 2 + r, so of the 13-14 samples of each
    # rank's share of an epoch rank 0 has 7 batches, rank 1 5, rank 2 4 (it joins after
    # step 4 of epoch 0, step 11 of epoch 1); checkpoints every 2 steps while all train.
    # Killed in the joined tail (step 5), before it (3), in the second epoch (11)
    rc, out, ref = _launch(tmp_path / "ref", script=JOIN)
    assert rc == 0, out
    assert _exactly_once(ref) == [0]
    rc, out, log = _launch(tmp_path / "killed", script=JOIN, job=["--kill", kill],
                           launch=["--max-restarts", "1"])
    assert rc == 0, out
    assert "restart 1 of 1 on 3 processes" in out
    assert _exactly_once(log) == [0, resumed]
    np.testing.assert_array_equal(np.load(log / "final.npy"), np.load(ref / "final.npy"))


@needs_mpi
def test_join_restarted_from_3_ranks_on_2_delivers_the_rest_exactly_once(tmp_path):
    # 43 samples, batches of 2: shares of 15, 14, 14 are 8, 7, 7 batches; killed at step 8
    # (ranks 1 and 2 have joined), the step-5 checkpoint resumes on 2 ranks, whose shares
    # of the 13 samples left (7 and 6: 4 and 3 batches) are uneven again
    slots = tmp_path / "slots"
    slots.write_text("2\n")
    rc, out, log = _launch(tmp_path, script=JOIN, samples=43, launch=[
        "--max-restarts", "1", "--min-nproc", "2", "--nproc-file", str(slots)],
        job=["--kill", "0:8", "--batch", "2", "--every", "5"])
    assert rc == 0, out
    assert "restart 1 of 1 on 2 processes" in out
    assert _exactly_once(log, samples=43) == [0, 5]
    assert json.loads((log / "resumed-1.json").read_text())["world_size"] == 2
    assert np.isfinite(np.load(log / "final.npy")).all()


@needs_mpi
def test_a_sleeping_rank_makes_the_others_time_out_naming_it(tmp_path):
    start = time.monotonic()
    rc, out, log = _launch(tmp_path, job=["--sleep", "1:3", "--timeout", "2"],
                           launch=["--watchdog", "1"])
    assert rc != 0
    # the launcher's watchdog names it first (after 1 s), then the ranks time out (2 s)
    assert "watchdog: rank 1 has not reached collective" in out
    assert "while ranks 0, 2 wait in collective" in out
    assert out.index("watchdog: rank 1") < out.index("did not complete within 2 s")
    assert time.monotonic() - start < 40
    # the first rank to raise ends the job (MPI_Abort): the other may be killed before it
    # writes its report, so at least one of them reports
    reported = [r for r in (0, 2) if (log / f"timeout-{r}.json").exists()]
    assert reported, out
    for r in reported:
        got = json.loads((log / f"timeout-{r}.json").read_text())
        assert 2.0 <= got["elapsed"] < 4.0
        assert f"did not complete within 2 s on rank {r} of 3: rank 1 did not reach it" in \
            got["message"]
    assert not (log / "timeout-1.json").exists()


@needs_mpi
def test_a_python_exception_on_one_rank_stops_the_others_with_its_message(tmp_path):
    rc, out, _ = _launch(tmp_path / "a", job=["--raise", "1:3"])
    assert rc != 0
    assert "ValueError: rank 1 fails on purpose at step 3" in out
    assert "rank 1 failed with ValueError: rank 1 fails on purpose at step 3" in out
    # a restart then runs the job to its end
    rc, out, _ = _launch(tmp_path / "b", job=["--raise", "1:3"], launch=["--max-restarts", "1"])
    assert rc == 0, out


@needs_mpi
def test_the_launcher_gives_up_after_max_restarts_or_below_min_nproc(tmp_path):
    rc, out, _ = _launch(tmp_path / "a", n=2, job=["--kill", "0:3"])
    assert rc == 9 and "restart" not in out
    slots = tmp_path / "slots"
    slots.write_text("1")
    rc, out, _ = _launch(tmp_path / "b", n=2, job=["--kill", "1:3"], launch=[
        "--max-restarts", "3", "--min-nproc", "2", "--nproc-file", str(slots)])
    assert rc != 0 and "1 slots remain, fewer than --min-nproc 2; giving up" in out


@needs_mpi
def test_sigterm_stops_the_whole_job_with_status_130(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "functorch_core.distributed.run", "-n", "2", str(SCRIPT),
         "--dir", str(tmp_path / "ckpt"), "--log", str(log), "--step-time", "1"],
        env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not list(log.glob("consumed-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 130
        time.sleep(0.5)
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert str(log) not in ps
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@needs_mpi
def test_a_bit_flipped_part_of_a_3_rank_checkpoint_is_refused_by_name(tmp_path, monkeypatch,
                                                                       reference):
    monkeypatch.setattr(mpi, "_world", mpi.World(None, 0, 1, 0, 1))
    folder = tmp_path / "ckpt"
    shutil.copytree(reference["ckpt"], folder)      # the reference run's 3-rank checkpoints
    last = dc.complete_steps(folder)[-1]
    ckpt = dc.load_latest(folder, any_world_size=True, restore_rng=False)
    assert ckpt.world_size == 3 and ckpt.step == last and ckpt.rng is not None
    part = folder / f"step-{last:08d}" / "rank-00001.part"
    data = bytearray(part.read_bytes())
    data[100] ^= 1
    part.write_bytes(bytes(data))
    with pytest.raises(dc.CheckpointError, match=r"rank-00001\.part' does not match its "
                       r"manifest's sha256"):
        dc.load_latest(folder, any_world_size=True, restore_rng=False)
    with pytest.raises(dc.CheckpointError, match="saved by 3 ranks, this job has 1"):
        dc.load_latest(folder, restore_rng=False)


@needs_mpi
def test_a_sharded_checkpoint_on_3_ranks(tmp_path):
    out = run_ranks(f'''
        import numpy as np
        import functorch_core.distributed as dist
        from functorch_core.distributed import checkpoint
        dist.init(timeout=20)
        r = dist.rank()
        checkpoint.save({{"shard": np.full(2, float(r))}}, 3, {str(tmp_path)!r}, sharded=True)
        got = checkpoint.load_latest({str(tmp_path)!r})
        report([got.step, got.state["shard"].tolist(), got.world_size])
    ''', n=3, timeout=60)
    assert out == [[[3, [float(r)] * 2, 3]] for r in range(3)]


def test_launcher_arguments_are_checked(monkeypatch):
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: "/x/mpiexec")
    assert launcher.command(["-n", "4", "--max-restarts", "3", "--min-nproc", "2", "t.py"],
                            n=3) == ["/x/mpiexec", "-n", "3", sys.executable, "t.py"]
    with pytest.raises(SystemExit, match="--min-nproc must be in"):
        launcher.command(["-n", "2", "--min-nproc", "3", "t.py"])
    with pytest.raises(SystemExit, match="--max-restarts must be at least 0"):
        launcher.command(["--max-restarts", "-1", "t.py"])
    with pytest.raises(SystemExit, match="--watchdog must be a positive number"):
        launcher.command(["--watchdog", "0", "t.py"])
