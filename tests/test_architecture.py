"""The package's import graph: no cycles and no upward imports (lazy and `TYPE_CHECKING`
imports included), and no module in scorer/ outgrows 500 lines."""

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
    """scorer.* modules a module imports: at module level, inside functions, and under
    `if TYPE_CHECKING:`.

    Function-local imports count: a lazy import that closes a loop is still a cycle (it
    only moves the failure to run time). `TYPE_CHECKING` imports count too: a circle
    held together by them is still two modules that need each other. `from pkg import
    mod` names the submodule `pkg.mod`, not the package.
    """
    found: set[str] = set()
    for sub in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(sub, ast.Import):
            names = [a.name for a in sub.names]
        elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
            submodules = [f"{sub.module}.{a.name}" for a in sub.names]
            names = [n for n in submodules if n in modules]
            if len(names) < len(submodules):  # some names are the package's own
                names.append(sub.module)
        found |= {n for n in names if n in modules}
    return found


LAYERS = (
    ("scorer.langfuse_client", "scorer.langfuse_caps"),
    ("scorer.prepare",),
    ("scorer.live",),
    ("scorer.sources",),
    ("scorer.judge",),
    ("scorer.sinks",),
    ("scorer.results",),
    ("scorer.calibrate", "scorer.view"),
    ("scorer.jobs",),
    ("scorer.cli",),
)
"""The pipeline, bottom to top: clients → prepare → live → sources → judge → sinks →
results → calibrate/view → jobs → cli. Everything else under `scorer.` (models, errors,
settings, the `_` helpers) is the foundation, layer 0; the package itself (its public
API) is the top. A module may import its own layer and those below, never one above."""


def layer(module: str) -> int:
    if module == "scorer":
        return len(LAYERS) + 1
    for rank, prefixes in enumerate(LAYERS, start=1):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return 0


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


def test_the_layers_cover_every_package():
    packages = {m.split(".")[1] for m in import_graph() if m.count(".") >= 2}
    assert {p for p in packages if not layer(f"scorer.{p}.x")} == set()


def test_no_module_imports_a_layer_above_its_own():
    graph = import_graph()
    assert "scorer.judge.rubric" in graph["scorer.results.rows"]  # the graph is real
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_the_layer_check_finds_an_upward_import():
    assert layer("scorer.sinks.store") < layer("scorer.results.rows")
    assert layer("scorer.settings") < layer("scorer.prepare.redact")
    assert layer("scorer.jobs.score") < layer("scorer")


def test_type_checking_imports_count():
    graph = import_graph()
    assert "scorer.sinks.store" in graph["scorer.results.rows"]  # imported for types only


def test_the_secret_rules_are_one_package():
    """The redaction layers live in `prepare/secrets/`, not as `prepare/secret_*.py` files."""
    assert sorted(p.name for p in (PACKAGE / "prepare").glob("secret_*.py")) == []
    layers = {p.stem for p in (PACKAGE / "prepare" / "secrets").glob("*.py")}
    assert {"base", "rules", "scan", "spread"} <= layers


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
