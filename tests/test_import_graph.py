"""codegen's modules import each other in one direction: no cycle, also through the imports
made inside functions (which would only hide one), and each stage only from the stages before
it (codegen/__init__.py: registry -> emit -> build -> verify -> export -> the CLI and the build API).
Read with ast, nothing imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

CODEGEN = Path(__file__).resolve().parent.parent / "codegen"
# the stages in pipeline order; a top-level module belongs to the stage named here
STAGES = ("registry", "emit", "build", "verify", "export", "entry")
TOP_LEVEL = {"torch_versions": "registry", "build": "build", "compute_build": "build", "objcache": "build", "clang": "build", "ninja_build": "build", "uptodate": "build", "__main__": "entry", "package": "entry",
             "__init__": "entry"}


def module_name(path: Path) -> str:
    """codegen/registry/loader.py -> 'registry.loader'; a package's __init__ is the package."""
    parts = list(path.relative_to(CODEGEN).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in CODEGEN.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The codegen modules a module imports, anywhere in it (`from . import x`, `from ..x import y`)."""
    path = MODULES[name]
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.level):
            continue
        base = package[:len(package) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        for alias in node.names:  # `from .registry import loader` imports a module
            sub = f"{target}.{alias.name}" if target else alias.name
            found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES and m != name}


def stage(name: str) -> str:
    head = name.split(".")[0]
    return head if head in STAGES else TOP_LEVEL[head]


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


GRAPH = {name: imports(name) for name in MODULES}


def test_the_graph_is_read():
    assert GRAPH["verify.check_metal"] >= {"verify.clang_check", "build", "emit.host_names"}
    assert GRAPH["registry.loader"] >= {"registry.schema", "registry.kernels", "registry.yaml_source"}
    assert GRAPH["__main__"] >= {"emit.stamp", "registry.loader", "verify.check_metal"}


def test_codegen_has_no_import_cycle():
    assert cycles(GRAPH) == []


def test_each_stage_imports_only_earlier_stages():
    backwards = sorted(f"{a} ({stage(a)}) imports {b} ({stage(b)})" for a, targets in GRAPH.items()
                       for b in targets if STAGES.index(stage(b)) > STAGES.index(stage(a)))
    assert backwards == []


def test_no_module_is_longer_than_one_sitting():
    long = {name: n for name, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 550}
    assert long == {}


def test_a_cycle_is_found():
    assert cycles({"build": {"clang_check"}, "clang_check": {"check_metal"}, "check_metal": {"build"},
                   "names": set()}) == [["build", "clang_check", "check_metal", "build"]]
