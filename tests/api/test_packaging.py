"""Packaging: the only import name installed is ``functorch_core`` (``ir/`` and ``backends/``
are mapped into it), so a user's own ``ir`` or ``backends`` package cannot shadow ours."""

import subprocess
import sys
import zipfile
from pathlib import Path

import paths
import tomllib

ROOT = Path(paths.ROOT)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_source_package_is_installed_under_functorch_core():
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"]
    found = set()
    for top in ("functorch_core", "ir", "backends"):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            name = ".".join(parts if top == "functorch_core" else ("functorch_core", *parts))
            found.add(name)
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == found
    assert dirs == {"functorch_core.ir": "ir", "functorch_core.backends": "backends"}


def test_a_users_ir_and_backends_packages_do_not_shadow_ours(tmp_path):
    for name in ("ir", "backends"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the user package')\n")
    code = ("import numpy as np, functorch_core as fc, functorch_core.ir as ir\n"
            "assert 'ir' not in __import__('sys').modules\n"
            "print(fc.jit(lambda x: x * 2)(np.ones(2)).tolist(), type(fc.make_graph("
            "lambda x: x + 1)(1.0)) is ir.Graph)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[2.0,", "2.0]", "True"]


def test_the_wheel_holds_functorch_core_alone(tmp_path):
    """Builds the wheel (pip fetches setuptools for the build) and lists its top level."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                           str(tmp_path), str(ROOT)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"functorch_core", "functorch_core-0.1.0.dist-info"}, tops
    assert "functorch_core/ir/primitives/elementwise.py" in names
    assert "functorch_core/backends/llvm/runtime.py" in names
