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
