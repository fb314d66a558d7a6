"""codegen's modules import each other in one direction: no cycle, also through the imports
made inside functions (which would only hide one). Read with ast, nothing imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

CODEGEN = Path(__file__).resolve().parent.parent / "codegen"


def imports(path: Path) -> set[str]:
    """The codegen modules a module imports, anywhere in it (`from . import x`, `from .x import y`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
    return found & {p.stem for p in CODEGEN.glob("*.py")}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, each once, as the path from its least module back to it."""
    found, path = set(), []

    def visit(node):
        if node in path:
            cycle = path[path.index(node):]
            start = cycle.index(min(cycle))
            found.add(tuple(cycle[start:] + cycle[:start]))
            return
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        path.pop()

    for node in sorted(graph):
        visit(node)
    return [[*c, c[0]] for c in sorted(found)]


def test_codegen_has_no_import_cycle():
    graph = {p.stem: imports(p) for p in CODEGEN.glob("*.py")}
    assert graph["check_metal"] >= {"clang_check", "build"}  # the graph is read: a known edge
    assert cycles(graph) == []


def test_a_cycle_is_found():
    assert cycles({"build": {"clang_check"}, "clang_check": {"check_metal"}, "check_metal": {"build"},
                   "names": set()}) == [["build", "clang_check", "check_metal", "build"]]
