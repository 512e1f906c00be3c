"""Architecture counts of issue 27, read from the source (nothing is imported).

    python tools/arch_metrics.py [--json] [--primitive tanh] [--root DIR]

Prints, per metric, the count and the places (file:line):

  function_imports   imports of project modules inside def/class bodies
  private_imports    `from pkg.mod import _name`, or a module named `_x`, imported from
                     another package (one place per private name or module)
  table_writes       module-level writes into a table imported from another project module:
                     `T[k] = v`, `M.attr = v`, `T.update/setdefault/append(...)` at top level
                     (also inside top-level for/if/with/try, not in function bodies)
  import_cycles      strongly connected components (> 1 module) of the module-level imports
  long_files         source files over 700 lines
  long_classes       classes over 250 lines
  primitive_files    files under ir/, backends/, functorch_core/, tests/ naming the primitive
                     (as an identifier, or a word in a string that is not a docstring): the
                     "files touched to add an elementwise primitive" proxy
  duplicates         pairs the `duplicates` tool reports for the repository, when on PATH
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from importgraph import Graph, build_graph, cycles

MAX_FILE_LINES = 700
MAX_CLASS_LINES = 250
TABLE_METHODS = frozenset({"update", "setdefault", "append"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def function_imports(graph: Graph) -> list[str]:
    return sorted({imp.where for imp in graph.imports() if imp.scope != "module"})


def private_imports(graph: Graph) -> list[str]:
    places = []
    for imp in graph.imports():
        if graph.modules[imp.importer].package == graph.modules[imp.target].package:
            continue
        if _private(imp.target.rpartition(".")[2]):
            places.append(f"{imp.where} {imp.target}")
        places.extend(f"{imp.where} {imp.target}.{n}" for n in imp.names if _private(n))
    return sorted(places)


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _top_level_statements(body: list[ast.stmt]):
    for node in body:
        yield node
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
                             ast.AsyncWith)):
            yield from _top_level_statements(node.body + getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            yield from _top_level_statements(
                node.body + node.orelse + node.finalbody
                + [s for h in node.handlers for s in h.body])


def _imported_names(graph: Graph, module) -> set[str]:
    """Names bound at module level by imports of other project modules."""
    names = set()
    for node in _top_level_statements(module.tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                imp.lineno == node.lineno for imp in module.imports):
            for alias in node.names:
                names.add(alias.asname or alias.name.partition(".")[0])
    return names


def _write_targets(node: ast.stmt):
    if isinstance(node, ast.Assign):
        yield from node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        yield node.target
    elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
          and isinstance(node.value.func, ast.Attribute)
          and node.value.func.attr in TABLE_METHODS):
        yield node.value.func


def table_writes(graph: Graph) -> list[str]:
    places = []
    for module in graph.modules.values():
        imported = _imported_names(graph, module)
        for node in _top_level_statements(module.tree.body):
            for target in _write_targets(node):
                if (isinstance(target, (ast.Subscript, ast.Attribute))
                        and _root_name(target) in imported):
                    places.append(f"{module.path}:{node.lineno} {ast.unparse(target)}")
    return sorted(places)


def import_cycles(graph: Graph) -> list[str]:
    return [f"{len(c)} modules: {' '.join(c)}" for c in cycles(graph)]


def long_files(graph: Graph) -> list[str]:
    return sorted(f"{m.path}:{m.lines} lines" for m in graph.modules.values()
                  if m.lines > MAX_FILE_LINES)


def long_classes(graph: Graph) -> list[str]:
    places = []
    for module in graph.modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    places.append(f"{module.path}:{node.lineno} {node.name} {length} lines")
    return sorted(places)


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _mentions(tree: ast.Module, name: str) -> bool:
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.Attribute) and node.attr == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.keyword)) and getattr(
                node, "name", getattr(node, "arg", None)) == name:
            return True
        if isinstance(node, ast.alias) and name in (node.name, node.asname):
            return True
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip and word.search(node.value)):
            return True
    return False


def primitive_files(root: Path, name: str) -> list[str]:
    files = []
    for folder in ("ir", "backends", "functorch_core", "tests"):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            if _mentions(tree, name):
                files.append(str(path.relative_to(root)))
    return files


def duplicates(root: Path) -> tuple[int, list[str]] | None:
    """The number of pairs the `duplicates` tool reports and its rows (None: not installed)."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    out = subprocess.run([tool, "--repo", str(root), "--most", "200", "--seconds", "300"],
                         capture_output=True, text=True, check=False).stdout.splitlines()
    head = re.match(r"(\d+) pairs?", out[0]) if out else None
    return (int(head.group(1)) if head else 0), out[1:]


def measure(root: Path, primitive: str = "tanh", with_duplicates: bool = True) -> dict:
    """{metric: (count, places)}; duplicates is None when the tool is not installed."""
    graph = build_graph(root)
    places = {
        "function_imports": function_imports(graph),
        "private_imports": private_imports(graph),
        "table_writes": table_writes(graph),
        "import_cycles": import_cycles(graph),
        "long_files": long_files(graph),
        "long_classes": long_classes(graph),
        "primitive_files": primitive_files(root, primitive),
    }
    metrics = {key: (len(found), found) for key, found in places.items()}
    if with_duplicates:
        metrics["duplicates"] = duplicates(root)
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--primitive", default="tanh", help="primitive for primitive_files")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--no-duplicates", action="store_true", help="skip the duplicates tool")
    args = parser.parse_args(argv)
    metrics = measure(args.root, args.primitive, not args.no_duplicates)
    if args.json:
        print(json.dumps({key: None if value is None else {"count": value[0], "places": value[1]}
                          for key, value in metrics.items()}, indent=1))
        return 0
    for key, value in metrics.items():
        if value is None:
            print(f"{key}: skipped (the `duplicates` command is not on PATH)")
            continue
        print(f"{key}: {value[0]}")
        for place in value[1]:
            print(f"  {place}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
