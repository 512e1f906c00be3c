"""The data readers' optional dependencies (pyarrow, s3fs with botocore and aiohttp,
protobuf) are imported when a reader first needs them, not by ``import functorch_core``."""

import subprocess
import sys

import pytest

from functorch_core.data.iter import arrow

LazyModule = type(arrow.pa)

OPTIONAL = ("pyarrow", "s3fs", "fsspec", "botocore", "aiohttp", "google.protobuf")


def test_importing_the_package_imports_no_optional_dependency():
    code = ("import sys, functorch_core\n"
            f"print(sorted(m for m in {OPTIONAL!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_missing_module_is_unavailable_and_raises_when_used():
    missing = LazyModule("functorch_core_no_such_module")
    assert not missing.available()
    with pytest.raises(ModuleNotFoundError):
        missing.anything()
    assert not LazyModule("functorch_core_no_such_package.sub").available()


def test_a_reader_without_its_dependency_names_the_extra(monkeypatch):
    monkeypatch.setattr(arrow, "pa", LazyModule("functorch_core_no_such_module"))
    with pytest.raises(ModuleNotFoundError, match=r"functorch_core\[arrow\]"):
        arrow._need_pyarrow("DataFrameMaker")
