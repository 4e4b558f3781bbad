"""The package's import graph has no cycles (lazy imports included), and no module in scorer/ outgrows 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "scorer"
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """scorer.* modules a module imports, at module level or inside functions.

    Function-local imports count: a lazy import that closes a loop is still a cycle (it
    only moves the failure to run time). `if TYPE_CHECKING:` blocks do not count.
    """
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue  # never executed at runtime
        for sub in ast.walk(node):
            names: list[str] = []
            if isinstance(sub, ast.Import):
                names = [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                names = [sub.module] + [f"{sub.module}.{a.name}" for a in sub.names]
            found |= {n for n in names if n in modules}
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None (iterative DFS, three colours)."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    for root in sorted(graph):
        if colour[root]:
            continue
        stack: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        colour[root] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                colour[node] = 2
                stack.pop()
                continue
            nxt = todo.pop()
            if colour[nxt] == 1:
                path = [n for n, _ in stack]
                return [*path[path.index(nxt) :], nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, sorted(graph[nxt])))
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_scorer():
    graph = import_graph()
    assert "scorer.jobs.run_state" in graph["scorer.jobs.batches"]  # the graph is real
    assert find_cycle(graph) is None


def test_no_module_in_scorer_over_500_lines():
    sizes = {module_name(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


def test_no_test_module_is_loaded_under_two_names():
    """Tests import each other as `tests.…` only (no `pythonpath` entry for tests/)."""
    import sys

    names: dict[Path, list[str]] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and Path(path).resolve().is_relative_to(REPO / "tests"):
            names.setdefault(Path(path).resolve(), []).append(name)
    assert {p: n for p, n in names.items() if len(n) > 1} == {}
    assert all(n[0].startswith("tests") for n in names.values())


def sdk_imports(path: Path) -> list[int]:
    """Lines of `path` that import the Anthropic SDK (any submodule) directly."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n == "anthropic" or n.startswith("anthropic.") for n in names):
            lines.append(node.lineno)
    return lines


def test_the_anthropic_sdk_is_imported_only_through_scorer_judge_sdk():
    """`scorer.judge.sdk` imports the SDK with the collector paused; any other module
    importing it first would pay the slow import again (see its docstring)."""
    found = {module_name(p): sdk_imports(p) for p in PACKAGE.rglob("*.py")}
    assert found["scorer.judge.sdk"]  # the scan sees real imports
    assert {m: lines for m, lines in found.items() if lines and m != "scorer.judge.sdk"} == {}
