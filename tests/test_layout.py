"""The core's layout: no import cycle among its modules, type-only and in-function imports
included (a module that imports another, directly or through a chain, is never imported
back by it)."""

import ast
import graphlib
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"


def _module_names() -> dict[str, Path]:
    """Every module of `rmm_core`, by dotted name (a package by its own name)."""
    out = {}
    for path in CORE.rglob("*.py"):
        parts = ["rmm_core", *path.relative_to(CORE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The core modules `name` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import submodule` depends on the submodule itself
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                      for a in node.names}
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_the_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert "rmm_core.memory" in graph["rmm_core"]
    assert "rmm_core.storage.base" in graph["rmm_core.storage.sql.turns"]  # `from ..base`
    assert "rmm_core.storage.sql.users" in graph["rmm_core.storage.sql"]


def test_no_import_cycle_in_the_core():
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_the_read_and_write_paths_do_not_import_each_other():
    """What both read (tokens, claims, stances, time words) lives in `language/` below
    them; the write path reaches the search index through a protocol of its own."""
    graph = import_graph()
    crossing = sorted(f"{name} -> {dep}" for name, deps in graph.items() for dep in deps
                      for a, b in (("read", "write"), ("write", "read"))
                      if name.startswith(f"rmm_core.{a}") and dep.startswith(f"rmm_core.{b}"))
    assert crossing == []
