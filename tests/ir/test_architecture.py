"""DESIGN.md's layer table, made executable: the import graph is read from the source
(tools/importgraph.py) and checked for imports from a lower layer to a higher one, for the
API layer reading backend internals, and for import cycles."""

import sys
from pathlib import Path

import paths
import pytest

ROOT = Path(paths.ROOT)
sys.path.insert(0, str(ROOT / "tools"))

import arch_metrics  # noqa: E402
import importgraph as ig  # noqa: E402


@pytest.fixture(scope="module")
def graph():
    return ig.build_graph(ROOT)


def _violations(graph, layer, interface=ig.API_BACKEND_INTERFACE):
    return [f"{imp.where}: {imp.importer} imports {imp.target} ({why})"
            for imp, why in ig.layer_violations(graph, interface)
            if ig.layer_of(imp.importer) == layer]


def test_graph_covers_the_three_layers(graph):
    layers = {ig.layer_of(name) for name in graph.modules}
    assert layers == {"ir", "backends", "api"}
    assert "functorch_core.ir.primitives" in graph.modules
    assert "functorch_core.backends.registry" in graph.modules
    assert any(imp.target == "functorch_core.ir.core" for imp in graph.imports())


def test_ir_imports_nothing_above_it(graph):
    assert _violations(graph, "ir") == []


def test_backends_do_not_import_the_api_layer(graph):
    assert _violations(graph, "backends") == []


def test_api_layer_reads_only_the_backend_interface(graph):
    assert _violations(graph, "api") == []


def test_the_backend_interface_names_real_modules(graph):
    assert ig.API_BACKEND_INTERFACE <= set(graph.modules)


def test_no_import_cycles(graph):
    assert [sorted(cycle) for cycle in ig.cycles(graph)] == []


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


SYNTHETIC = {
    "ir/__init__.py": "",
    "ir/core.py": "from functorch_core.backends import lower\n",       # ir -> backends
    "backends/__init__.py": "",
    "backends/registry.py": "",
    "backends/lower.py": "from ..ir import core\n",                    # closes the cycle
    "backends/sneaky.py": "def f():\n    from functorch_core import api\n",   # -> the API
    "functorch_core/__init__.py": "",
    "functorch_core/api.py": (
        "from functorch_core.backends import registry\n"               # allowed
        "from functorch_core.backends.lower import thing\n"),          # an internal
}


def test_checks_catch_a_cycle_and_layer_violations(tmp_path):
    _write(tmp_path, SYNTHETIC)
    graph = ig.build_graph(tmp_path)
    assert ig.cycles(graph) == [["functorch_core.backends.lower", "functorch_core.ir.core"]]
    interface = frozenset({"functorch_core.backends.registry"})
    found = {(imp.importer, imp.target) for imp, _ in ig.layer_violations(graph, interface)}
    assert found == {
        ("functorch_core.ir.core", "functorch_core.backends.lower"),
        ("functorch_core.backends.sneaky", "functorch_core.api"),
        ("functorch_core.api", "functorch_core.backends.lower"),
    }


def test_metrics_count_what_they_name(tmp_path):
    _write(tmp_path, {
        **SYNTHETIC,
        "functorch_core/rules.py": (
            "from functorch_core.ir.core import TABLE, _hidden\n"
            "from functorch_core import api\n"
            "TABLE['frobnicate'] = 1\n"
            "for k in (1, 2):\n"
            "    api.RULES.update({k: k})\n"
            "local = {}\n"
            "local['x'] = 2\n"
            "def g():\n"
            "    TABLE['y'] = 3\n"),
    })
    metrics = arch_metrics.measure(tmp_path, "frobnicate", with_duplicates=False)
    assert metrics["function_imports"] == (1, ["backends/sneaky.py:2"])
    assert metrics["private_imports"] == (
        1, ["functorch_core/rules.py:1 functorch_core.ir.core._hidden"])
    assert metrics["table_writes"] == (2, ["functorch_core/rules.py:3 TABLE['frobnicate']",
                                           "functorch_core/rules.py:5 api.RULES.update"])
    assert metrics["primitive_files"] == (1, ["functorch_core/rules.py"])
    assert metrics["import_cycles"][0] == 1
