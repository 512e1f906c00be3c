"""functorch_core.save to a path is atomic: a kill -9, a full disk or an error mid-save leaves
the previous checkpoint loadable and no temporary file behind."""

import errno
import io
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import functorch_core as fc

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and signals")


def _listing(folder):
    return sorted(os.listdir(folder))


def _temps(folder):
    return [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(".tmp")]


def test_clean_saves_leave_only_the_checkpoint(tmp_path):
    for i in range(3):
        fc.save({"i": i, "w": np.full(1000, i)}, tmp_path / "c.npz")
        assert _listing(tmp_path) == ["c.npz"]
    assert fc.load(tmp_path / "c.npz")["i"] == 2


_CHILD = r"""
import sys
import numpy as np
import functorch_core as fc
path, n, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
base = np.resize(np.arange(251, dtype=np.uint8), n)
print("ready", flush=True)
while True:
    v += 1
    fc.save({"v": v, "x": base + np.uint8(v % 256)}, path)
    print("saved", v, flush=True)
"""


def _check_content(ckpt, base):
    v = ckpt["v"]
    assert isinstance(v, int) and ckpt["x"].shape == base.shape
    assert np.array_equal(ckpt["x"], base + np.uint8(v % 256)), f"version {v} is garbled"
    return v


@posix_only
def test_kill_9_during_saves_never_loses_the_previous_checkpoint(tmp_path):
    """A child saves a 50 MB checkpoint over the previous one in a loop and is killed with
    SIGKILL at a random (seeded) moment, five times: the path always loads, and holds the last
    save the child reported finished or the one after it, never a mix or a broken file."""
    n, rounds = 50 * 2**20, 5
    path = tmp_path / "c.npz"
    base = np.resize(np.arange(251, dtype=np.uint8), n)
    fc.save({"v": 0, "x": base}, path)
    before, left = 0, set()
    rng = random.Random(37)
    started = time.monotonic()
    killed_mid_write = 0
    for _ in range(rounds):
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(n), str(before)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.05, 1.5))
        finally:
            child.send_signal(signal.SIGKILL)
            out, _ = child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL
        finished = [int(line.split()[1]) for line in out.splitlines() if line.startswith("saved")]
        last = finished[-1] if finished else before
        got = _check_content(fc.load(path), base)
        assert got in (last, last + 1), (got, last)
        # At most one temporary per kill; older ones are gone unless the child died before
        # its first save could remove them.
        new = set(_temps(tmp_path)) - left
        assert len(new) <= 1 and all(s.startswith(".c.npz.") for s in new), new
        killed_mid_write += bool(new)
        left = set(_temps(tmp_path))
        for s in left:      # as if the next save came a minute later: it removes them
            _age(tmp_path / s, 60)
        before = got
    assert killed_mid_write >= 1, "no kill landed inside a save: the test proved nothing"
    fc.save({"v": -1, "x": base[:10]}, path)
    assert _listing(tmp_path) == ["c.npz"]
    assert time.monotonic() - started < 60


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


_HOLD_LOCKED = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


@posix_only
def test_a_dead_saves_temporary_is_removed_by_the_next_save_and_nothing_else(tmp_path):
    fc.save({"a": 1}, tmp_path / "c.npz")
    dead = tmp_path / ".c.npz.0123456789ab.tmp"       # unlocked and old: a killed save's
    young = tmp_path / ".c.npz.00000000000a.tmp"      # unlocked but new: may be just created
    users = [tmp_path / ".c.npz.backup.tmp", tmp_path / ".d.npz.0123456789ab.tmp"]
    live = tmp_path / ".c.npz.ba9876543210.tmp"       # locked: a save still writing
    for f in [dead, young, *users]:
        f.write_bytes(b"partial")
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCKED, str(live)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for f in [dead, live, *users]:
            _age(f, 60)
        fc.save({"a": 2}, tmp_path / "c.npz")
        assert not dead.exists()
        assert young.exists() and live.exists() and all(f.exists() for f in users)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    fc.save({"a": 3}, tmp_path / "c.npz")    # the holder died: its temporary is now a dead one
    assert not live.exists() and young.exists()
    assert fc.load(tmp_path / "c.npz") == {"a": 3}


def _mount_tmpfs(folder, size):
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a real full disk needs root and mount(8) to make a small tmpfs")
    folder.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not permitted here: {r.stderr.strip()}")


def test_full_disk_on_a_real_tmpfs_keeps_the_previous_checkpoint(tmp_path):
    mnt = tmp_path / "mnt"
    _mount_tmpfs(mnt, "2m")
    try:
        small = {"w": np.arange(10_000.0), "step": 1}
        fc.save(small, mnt / "c.npz")
        big = {"w": np.random.default_rng(0).standard_normal(3 * 2**20 // 8), "step": 2}
        with pytest.raises(OSError) as info:
            fc.save(big, mnt / "c.npz")
        assert info.value.errno == errno.ENOSPC
        got = fc.load(mnt / "c.npz")
        assert got["step"] == 1
        np.testing.assert_array_equal(got["w"], small["w"])
        assert _listing(mnt) == ["c.npz"]
    finally:
        _unmount(mnt)


def _unmount(folder):
    if subprocess.run(["umount", str(folder)], capture_output=True, timeout=30).returncode:
        # still busy (a failing test's traceback may hold a file open): detach it lazily
        subprocess.run(["umount", "-l", str(folder)], check=True, timeout=30)


def _half_written_then(exc):
    real = np.savez

    def savez(f, **members):
        buf = io.BytesIO()
        real(buf, **members)
        f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
        f.flush()
        raise exc
    return savez


@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device"),
                                 KeyboardInterrupt()], ids=["ENOSPC", "KeyboardInterrupt"])
def test_an_error_midway_keeps_the_previous_checkpoint(tmp_path, monkeypatch, exc):
    fc.save({"step": 1}, tmp_path / "c.npz")
    monkeypatch.setattr(np, "savez", _half_written_then(exc))
    with pytest.raises(type(exc)):
        fc.save({"step": 2, "w": np.ones(10_000)}, tmp_path / "c.npz")
    monkeypatch.undo()
    assert fc.load(tmp_path / "c.npz") == {"step": 1}
    assert _listing(tmp_path) == ["c.npz"]


def _failing_fsync(on_folder, err):
    real = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode) == on_folder:
            raise OSError(err, os.strerror(err))
        return real(fd)
    return fsync


def test_a_failing_file_fsync_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    fc.save({"step": 1}, tmp_path / "c.npz")
    monkeypatch.setattr(os, "fsync", _failing_fsync(False, errno.EIO))
    with pytest.raises(OSError, match="Input/output error"):
        fc.save({"step": 2}, tmp_path / "c.npz")
    monkeypatch.undo()
    assert fc.load(tmp_path / "c.npz") == {"step": 1}
    assert _listing(tmp_path) == ["c.npz"]


@posix_only
def test_folder_fsync_unsupported_is_ignored_but_a_real_error_is_raised(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", _failing_fsync(True, errno.EINVAL))
    fc.save({"step": 1}, tmp_path / "c.npz")
    monkeypatch.setattr(os, "fsync", _failing_fsync(True, errno.EIO))
    with pytest.raises(OSError) as info:
        fc.save({"step": 2}, tmp_path / "c.npz")
    assert "holds the new checkpoint, but flushing its folder failed" in str(info.value.__notes__)
    monkeypatch.undo()
    assert fc.load(tmp_path / "c.npz") == {"step": 2}


@posix_only
def test_file_modes_are_umask_derived_and_kept_on_overwrite(tmp_path):
    old = os.umask(0o027)
    try:
        fc.save({"a": 1}, tmp_path / "new.npz")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o640
    fc.save({"a": 1}, tmp_path / "kept.npz")
    os.chmod(tmp_path / "kept.npz", 0o604)
    fc.save({"a": 2}, tmp_path / "kept.npz")
    assert stat.S_IMODE(os.stat(tmp_path / "kept.npz").st_mode) == 0o604
    assert fc.load(tmp_path / "kept.npz") == {"a": 2}


@posix_only
def test_a_read_only_checkpoint_is_not_replaced(tmp_path, monkeypatch):
    """As ``open(path, 'wb')`` would refuse it; root may write anything, so there the test
    answers access() as an ordinary user's would be answered."""
    fc.save({"a": 1}, tmp_path / "c.npz")
    os.chmod(tmp_path / "c.npz", 0o444)
    if os.geteuid() == 0:
        monkeypatch.setattr(os, "access", lambda p, mode: not (
            mode & os.W_OK and not os.stat(p).st_mode & stat.S_IWUSR))
    with pytest.raises(PermissionError, match="read-only"):
        fc.save({"a": 2}, tmp_path / "c.npz")
    assert fc.load(tmp_path / "c.npz") == {"a": 1}


@posix_only
def test_saving_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    fc.save({"a": 1}, tmp_path / "real" / "c.npz")
    os.symlink(tmp_path / "real" / "c.npz", tmp_path / "latest.npz")
    fc.save({"a": 2}, tmp_path / "latest.npz")
    assert os.path.islink(tmp_path / "latest.npz")
    assert fc.load(tmp_path / "real" / "c.npz") == {"a": 2}
    assert _listing(tmp_path / "real") == ["c.npz"]


def test_an_unwritable_folder_says_why_the_folder_matters(tmp_path, monkeypatch):
    fc.save({"a": 1}, tmp_path / "c.npz")
    real = os.open

    def no_create(path, flags, *args):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path, flags, *args)
    monkeypatch.setattr(os, "open", no_create)
    with pytest.raises(PermissionError) as info:
        fc.save({"a": 2}, tmp_path / "c.npz")
    assert "so that folder must be writable" in str(info.value.__notes__)
    monkeypatch.undo()
    assert fc.load(tmp_path / "c.npz") == {"a": 1}
