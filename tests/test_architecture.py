"""Import layering, checked by walking the source with ``ast`` (imports under TYPE_CHECKING are skipped).

- pure modules (adapter bookkeeping, serving config, the tiny model's recipe and corpus, config loading,
  the SFT config, the evaluation report) import nothing from ray, vllm, httpx, torch, serve/ or jobs/;
- environments/ never imports actors/, serve/ or jobs/; actors/ never imports serve/ or jobs/;
- jobs/ holds entry points: nothing outside it imports it (serve/ and benchmarks/ neither: the benchmarks
  measure libraries and need no exception), and each of its modules is a job with a ``main``, but for the
  plumbing the jobs share (``JOB_PLUMBING``); a library found there belongs in actors/;
- no modules import each other in a circle, and inside environments/ and actors/ no subpackages or top
  modules do either (``environments.tasks`` and ``environments.sandboxes``, ``actors.sft`` and
  ``actors.models``): each imports only what sits below it, lazy imports counted.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "serve", "jobs", "environments", "benchmarks")
PURE_MODULES = (
    "actors/grpo/advantages.py",
    "actors/grpo/backoff.py",
    "actors/grpo/groups.py",
    "actors/grpo/samples.py",
    "actors/grpo/staleness.py",
    "actors/serving/adapters.py",
    "actors/serving/config.py",
    "actors/config_loader.py",
    "actors/errors.py",
    "actors/eval_report.py",
    "actors/progress.py",
    "actors/sft/config.py",
    "actors/trainer_settings.py",
    "actors/pool_settings.py",
    "actors/rollout_settings.py",
    "environments/tiny_model/recipe.py",
    "environments/tiny_model/corpus.py",
)
HEAVY = ("ray", "vllm", "httpx", "torch", "transformers", "serve", "jobs")
FORBIDDEN = {
    "environments": ("actors", "serve", "jobs"),
    "actors": ("serve", "jobs"),
    "serve": ("jobs",),
    "benchmarks": ("jobs",),
}
JOB_PLUMBING = ("jobs/__init__.py", "jobs/cli.py", "jobs/sections.py", "jobs/stack.py")
"""The modules of jobs/ that are not a job: the command line every job shares, the config sections the train
and evaluate jobs share, and the serving stack with the guard in front that the train, evaluate and smoke
jobs start (the last two import serve/, which actors/ may not)."""


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(child) for child in ast.walk(node))
    roots = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_import_no_heavy_or_io_stack(module: str):
    assert not imported_roots(REPO / module) & set(HEAVY), module


def test_packages_respect_the_layering():
    offenders = []
    for package, banned in FORBIDDEN.items():
        for path in (REPO / package).rglob("*.py"):
            bad = imported_roots(path) & set(banned)
            if bad:
                offenders.append(f"{path.relative_to(REPO)} imports {sorted(bad)}")
    assert not offenders


def test_nothing_outside_jobs_imports_jobs():
    assert {package for package, banned in FORBIDDEN.items() if "jobs" in banned} == set(PACKAGES) - {"jobs"}


def test_jobs_holds_entry_points_only():
    """Each module of jobs/ but its plumbing defines ``main`` and runs it as ``python -m jobs.<name>``."""
    not_jobs = []
    for path in sorted((REPO / "jobs").rglob("*.py")):
        if str(path.relative_to(REPO)) in JOB_PLUMBING:
            continue
        body = ast.parse(path.read_text()).body
        has_main = any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in body)
        runs_main = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in body)
        if not (has_main and runs_main):
            not_jobs.append(str(path.relative_to(REPO)))
    assert not not_jobs, f"not entry points (move the library to actors/): {not_jobs}"


def module_graph() -> dict[str, set[str]]:
    """Each module of the packages and the modules it imports (anywhere in it, lazily too: a cycle of lazy
    imports is still two libraries that cannot be understood apart). Imports of a package's
    ``__init__`` count only when it is imported by name, not as the parent of a submodule."""
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return {
        name: imported_modules(name, path.read_text(), path.name == "__init__.py", modules.keys())
        for name, path in modules.items()
    }


def imported_modules(name: str, source: str, is_init: bool, modules: Collection[str]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (its ``source``) imports, at any depth of its code."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_init else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            submodules = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
            targets.update(submodules or {base})
    resolved = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_modules_import_each_other_in_a_circle():
    assert cycles(module_graph()) == []


LAYERED = ("environments", "actors")
"""The packages whose subpackages and top modules (``environments.tasks``, ``actors.models``) must import
one way: a unit is the first two parts of a module's name."""
ALLOWED_UNIT_CYCLES: tuple[tuple[str, ...], ...] = ()
"""Loops between units not untangled yet, each with the reason beside it; empty, and meant to stay so."""


def unit(module: str) -> str:
    """The subpackage or top module ``module`` belongs to: ``environments.tasks.shipped.probes`` ->
    ``environments.tasks``."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """``graph`` (module -> the modules it imports) folded into ``package``'s units: one edge where any
    module of a unit imports any module of another unit of ``package``."""
    units: dict[str, set[str]] = {}
    for module, imported in graph.items():
        if module.split(".")[0] != package:
            continue
        edges = units.setdefault(unit(module), set())
        edges.update(unit(target) for target in imported if target.split(".")[0] == package)
        edges.discard(unit(module))
    for edges in list(units.values()):
        for target in edges:
            units.setdefault(target, set())
    return units


def unit_cycle_report(graph: dict[str, set[str]], cycle: list[str]) -> list[str]:
    """The module imports that close ``cycle`` (units), as ``a.b.c -> d.e.f`` lines."""
    members = set(cycle)
    return sorted(
        f"{module} -> {target}"
        for module, imported in graph.items()
        for target in imported
        if unit(module) in members and unit(target) in members and unit(module) != unit(target)
    )


def test_a_loop_between_units_is_found_and_names_the_imports_that_close_it():
    planted = {
        "environments.a.x": {"environments.b.y"},
        "environments.b.y": {"environments.b.z"},
        "environments.b.z": {"environments.a.w"},  # a lazy import in the real graph counts the same
        "environments.a.w": set(),
        "environments.c": {"environments.a.x"},
        "actors.m": {"environments.a.x"},
    }
    units = unit_graph(planted, "environments")
    assert units == {
        "environments.a": {"environments.b"},
        "environments.b": {"environments.a"},
        "environments.c": {"environments.a"},
    }
    assert cycles(units) == [["environments.a", "environments.b"]]
    assert unit_cycle_report(planted, ["environments.a", "environments.b"]) == [
        "environments.a.x -> environments.b.y",
        "environments.b.z -> environments.a.w",
    ]
    del planted["environments.b.z"]
    assert cycles(unit_graph(planted, "environments")) == []


def test_an_import_inside_a_function_is_an_edge():
    source = "def late():\n    from environments.b.y import thing\n"
    modules = ("environments.a.x", "environments.b.y")
    assert imported_modules("environments.a.x", source, False, modules) == {"environments.b.y"}


@pytest.mark.parametrize("package", LAYERED)
def test_the_units_of_a_package_import_one_way(package: str):
    graph = module_graph()
    found = [tuple(c) for c in cycles(unit_graph(graph, package)) if tuple(c) not in ALLOWED_UNIT_CYCLES]
    details = {" <-> ".join(c): unit_cycle_report(graph, list(c)) for c in found}
    assert not found, f"units that import each other (move the shared part below both): {details}"
