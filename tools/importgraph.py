"""The project's import graph, read from the source with `ast` (nothing is imported).

Used by `tools/arch_metrics.py` and `tests/ir/test_architecture.py`.

Module names are the installed ones: `ir/x.py` is `functorch_core.ir.x`, `backends/y.py` is
`functorch_core.backends.y`. An edge goes to the module an import statement names: for
`from pkg import name` that is `pkg.name` when it is a module, else `pkg`. The implicit import
of the parent packages' `__init__` is not an edge (every module would then sit in one circle
with `functorch_core/__init__.py`, which imports the whole API).

Layers (DESIGN.md): `ir` imports nothing of the project above it, `backends` import `ir` only,
the API layer (the rest of `functorch_core`) imports `ir` and, of `backends`, only the modules
in `API_BACKEND_INTERFACE`.
"""

from __future__ import annotations

import ast
import gc
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "functorch_core"
# source folder -> installed package name
SOURCE_DIRS = {
    "ir": f"{PACKAGE}.ir",
    "backends": f"{PACKAGE}.backends",
    PACKAGE: PACKAGE,
}

# The backend modules the API layer may import: the entry points it drives, never the
# internals of one backend (measured: these five are all the API layer needs).
#   registry     -- the backends by name: compile and run a graph; eager evaluation of one
#                   primitive on host arrays (random's keys)
#   devices      -- is this a device array, moving arrays to and from the GPU, whether a GPU
#                   backend can run here, eager evaluation on the device
#   profiling    -- the profiler's spans and switches
#   determinism  -- the deterministic-algorithms switch
#   llvm.aot     -- ahead-of-time compilation of an exported graph to a shared library
# Numbers that both layers compute with live below both, in `functorch_core.ir.numerics`.
API_BACKEND_INTERFACE = frozenset(f"{PACKAGE}.backends.{name}" for name in (
    "registry", "devices", "profiling", "determinism", "llvm.aot", "mpi", "openblas"))


@dataclass(frozen=True)
class Import:
    """One imported module (a statement naming several modules gives several)."""

    importer: str
    target: str
    names: tuple[str, ...]  # names taken from `target` (empty for `import target`)
    path: Path
    lineno: int
    scope: str  # "module", "class" or "function"
    type_checking: bool  # under `if TYPE_CHECKING:`

    @property
    def runs_at_import(self) -> bool:
        return self.scope != "function" and not self.type_checking

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    lines: int
    imports: list[Import] = field(default_factory=list)

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def layer_of(module: str) -> str:
    for layer in ("ir", "backends"):
        prefix = f"{PACKAGE}.{layer}"
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "api"


def module_name(root: Path, path: Path) -> str | None:
    """Installed dotted name of a source file, or None outside the three source folders."""
    rel = path.relative_to(root)
    package = SOURCE_DIRS.get(rel.parts[0])
    if package is None:
        return None
    parts = [*package.split("."), *rel.parts[1:-1]]
    if rel.name != "__init__.py":
        parts.append(rel.stem)
    return ".".join(parts)


def source_files(root: Path) -> list[Path]:
    return sorted(p for d in SOURCE_DIRS for p in (root / d).rglob("*.py")
                  if ".venv" not in p.parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _child_statements(node: ast.AST):
    """The statements nested in a compound statement (imports are never in expressions)."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, ()):
            if isinstance(child, (ast.excepthandler, ast.match_case)):
                yield from child.body
            else:
                yield child


def _import_statements(tree: ast.Module):
    """Yield (node, scope, type_checking) for every import statement."""
    stack = [(node, "module", False) for node in reversed(tree.body)]
    while stack:
        node, scope, tc = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, scope, tc
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, scope, True) for child in reversed(node.body))
            stack.extend((child, scope, tc) for child in reversed(node.orelse))
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = "function"
        elif isinstance(node, ast.ClassDef) and scope == "module":
            inner = "class"
        else:
            inner = scope
        stack.extend((child, inner, tc) for child in reversed(list(_child_statements(node))))


def _resolve_base(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.package.split(".")
    base = parts[: len(parts) - (node.level - 1)]
    if node.module:
        base.append(node.module)
    return ".".join(base)


def _targets(module: Module, node: ast.Import | ast.ImportFrom, known: set[str]):
    """Yield (target module, names taken from it) for one statement, project modules only."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name, ()
        return
    base = _resolve_base(module, node)
    from_base = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in known:
            yield sub, ()
        else:
            from_base.append(alias.name)
    if from_base and base in known:
        yield base, tuple(from_base)


@dataclass
class Graph:
    root: Path
    modules: dict[str, Module]

    def imports(self):
        for module in self.modules.values():
            yield from module.imports

    def edges(self) -> dict[str, set[str]]:
        """Module -> modules it imports while it is being imported (no self-loops)."""
        out = {name: set() for name in self.modules}
        for imp in self.imports():
            if imp.runs_at_import and imp.target != imp.importer:
                out[imp.importer].add(imp.target)
        return out


def build_graph(root: Path | str) -> Graph:
    root = Path(root)
    was_enabled = gc.isenabled()
    gc.disable()        # the collector would rescan every tree kept so far: 2.5x the time
    try:
        modules = {}
        for path in source_files(root):
            name = module_name(root, path)
            text = path.read_text(encoding="utf-8")
            modules[name] = Module(name, path.relative_to(root), path.name == "__init__.py",
                                   ast.parse(text, filename=str(path)), text.count("\n") + 1)
    finally:
        if was_enabled:
            gc.enable()
    known = set(modules)
    for module in modules.values():
        for node, scope, tc in _import_statements(module.tree):
            for target, names in _targets(module, node, known):
                module.imports.append(Import(module.name, target, names, module.path,
                                             node.lineno, scope, tc))
    return Graph(root, modules)


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = graph.edges()
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layer_violations(graph: Graph,
                     interface: frozenset[str] = API_BACKEND_INTERFACE) -> list[tuple[Import, str]]:
    """Imports that break the layer table, at any scope, with the rule each breaks."""
    bad = []
    for imp in graph.imports():
        src, dst = layer_of(imp.importer), layer_of(imp.target)
        if src == "ir" and dst != "ir":
            bad.append((imp, f"ir imports the {dst} layer"))
        elif src == "backends" and dst == "api":
            bad.append((imp, "a backend imports the API layer"))
        elif src == "api" and dst == "backends" and imp.target not in interface:
            bad.append((imp, "the API layer imports a backend internal"))
    return bad
