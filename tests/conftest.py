import contextlib
import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# compiled code is cached in a throwaway folder for the session, never in the user's home
_CACHE_DIR = tempfile.TemporaryDirectory(prefix="functorch_core-test-cache-")
os.environ["FUNCTORCH_CORE_CACHE_DIR"] = _CACHE_DIR.name

# ci draws the same examples on every run (a red CI names a change, not a draw); dev and
# thorough search afresh each run
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items):
    """The CUDA simulator's and PTX tests (tests/backends/cuda/test_cuda_*.py) run under ``make
    test-gpu-sim``, which installs numba-cuda and NVIDIA's compiler wheels."""
    for item in items:
        if item.path.name.startswith("test_cuda_"):
            item.add_marker(pytest.mark.gpu_sim)


@pytest.fixture
def log_retraces():
    """``fc.config.log_retraces`` on for the test, restored after it."""
    import functorch_core as fc
    old = fc.config.log_retraces
    fc.config.log_retraces = True
    try:
        yield
    finally:
        fc.config.log_retraces = old


@pytest.fixture
def one_thread_each_entries(monkeypatch):
    """A list that gets ``True`` each time llvm's loops enter ``one_thread_each`` (the
    scope that holds BLAS to one thread), which is replaced by a recorder."""
    import functorch_core.backends.llvm.loops as loops  # only the tests that ask need llvm
    entered = []

    @contextlib.contextmanager
    def record():
        entered.append(True)
        yield
    monkeypatch.setattr(loops, "one_thread_each", record)
    return entered
