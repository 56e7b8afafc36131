"""The repo task set: every unit becomes a repair, a build, an extend and a qa task in its repository.

- repair: the unit carries its bug; the instruction is the bug report; hidden tests pin the behaviour.

Hidden tests are judged by outputs (``probes.py``: the solution runs in a child process, Python or Node,
that only emits results; the comparison never loads it), on a fixed core of cases plus inputs the judge
draws afresh at each verification from the unit's generator (``inputs.py``), so no answer table passes.
- build: the function is absent; the instruction is its spec; hidden tests check it.
- extend: the function works; the instruction is a feature request; hidden tests check the feature.
- qa: the repository is intact; the agent answers a question about what the code returns; a checker
  script (hidden; ``code/qa/check_answer.py``) accepts any equivalent spelling (JSON or Python literal,
  quotes, tuples vs lists, float round-off) of the value, which was computed from the code itself
  (Python) or fixed by hand (JS).

Ten tasks of each kind are held out for the eval split (40), chosen by a seeded shuffle.
"""

from __future__ import annotations

import json
import zlib

import numpy as np

from environments.core.types import CommandOracle, Kind, Limits, Reference, Source, Split, Task
from environments.tasks.shipped.inputs import GENERATED_PER_VERIFY, generator_source
from environments.tasks.shipped.probes import NODE_ORACLE_COMMAND, ORACLE_COMMAND, js_probe_files, probe_files
from environments.tasks.shipped.repos import module_path, render_repo
from environments.tasks.shipped.units import CODE, Lang, Unit
from environments.tasks.shipped.units_js import JS_UNITS
from environments.tasks.shipped.units_misc import MISC_UNITS
from environments.tasks.shipped.units_text import TEXT_UNITS
from environments.tasks.shipped.units_time import TIME_UNITS

UNITS: tuple[Unit, ...] = TEXT_UNITS + TIME_UNITS + MISC_UNITS + JS_UNITS
EVAL_PER_KIND = 10
SEED = 20260402
REPO_LIMITS = Limits(agent_timeout_s=900.0, verify_timeout_s=60.0, memory_mb=1024, max_processes=64)

CHECKER = (CODE / "qa" / "check_answer.py").read_text(encoding="utf-8")
"""The qa tasks' hidden checker script, with ``EXPECTED_SLOT`` where the expected value goes."""
EXPECTED_SLOT = '"__EXPECTED_JSON__"'


def checker_script(value: object) -> bytes:
    """The checker that accepts ``value``: the slot becomes a Python literal of its JSON."""
    if CHECKER.count(EXPECTED_SLOT) != 1:
        raise ValueError(f"code/qa/check_answer.py must hold {EXPECTED_SLOT} exactly once")
    return CHECKER.replace(EXPECTED_SLOT, repr(json.dumps(value))).encode()


def _pick(unit: Unit, options: tuple[str, ...]) -> str:
    return options[zlib.crc32(f"{unit.repo}.{unit.name}".encode()) % len(options)]


def _repo_units(unit: Unit) -> list[Unit]:
    return [u for u in UNITS if u.repo == unit.repo]


def _sources(unit: Unit, own: str | None) -> dict[str, str]:
    sources = {u.name: u.source for u in _repo_units(unit)}
    if own is None:
        del sources[unit.name]
    else:
        sources[unit.name] = own
    return sources


def _visible(unit: Unit, hide_own: bool) -> dict[str, tuple[str, ...]]:
    return {u.name: () if (hide_own and u is unit) else u.cases for u in _repo_units(unit)}


def _module_text(unit: Unit, own: str | None) -> bytes:
    return render_repo(_repo_units(unit), _sources(unit, own), {})[module_path(unit)]


def probe_value(unit: Unit) -> object:
    """The value of the unit's qa probe, from running the repository's own code (JS: the unit's answer)."""
    if unit.lang is Lang.JS:
        assert unit.probe_answer is not None, f"JS unit {unit.name} needs probe_answer"
        return json.loads(unit.probe_answer)
    namespace: dict[str, object] = {}
    exec(_module_text(unit, unit.source).decode(), namespace)  # noqa: S102 - our own generated module
    exec("\n".join(unit.test_imports), namespace)  # noqa: S102
    return json.loads(json.dumps(eval(unit.probe, namespace)))  # noqa: S307


def _judged(
    unit: Unit,
    workspace: dict[str, bytes],
    reference: Reference,
    hidden_cases: tuple[str, ...],
    visible: dict[str, tuple[str, ...]],
    feature: bool,
) -> tuple[dict[str, bytes], CommandOracle]:
    """Hidden files and oracle, judged by outputs in a process that never loads the solution
    (``probes.py``): the visible cases, the hidden ones, and inputs the judge draws fresh at every
    verification from the unit's generator (``inputs.py``; ``feature``: the extend task's feature), their
    outputs computed from the reference inside the judge."""
    units = _repo_units(unit)
    cases = [(f"{u.name}_{i}", c) for u in units for i, c in enumerate(visible.get(u.name, ()), start=1)]
    cases += [(f"hidden_{unit.name}_{i}", c) for i, c in enumerate(hidden_cases, start=1)]
    tree = {**workspace, **reference.files}
    generated = {
        "call": f"gen_{unit.name}",
        "count": GENERATED_PER_VERIFY,
        "feature": feature,
        "source": generator_source(unit.name),
    }
    if unit.lang is Lang.JS:
        used = {u.module: [] for u in units}
        for u in units:
            if visible.get(u.name) or u is unit:
                used[u.module].append(u.name)
        modules = [(module_path(u), used.pop(u.module)) for u in units if used.get(u.module)]
        return js_probe_files(cases, modules, tree, generated), CommandOracle(NODE_ORACLE_COMMAND)
    setup = sorted({imp for u in units for imp in u.test_imports})
    setup += [f"from {u.repo}.{u.module} import {u.name}" for u in units if visible.get(u.name) or u is unit]
    own = f"{unit.repo}.{unit.module}"
    fresh = {
        "generated": generated,
        "reference": {
            "modules": {own: reference.files[module_path(unit)].decode()},
            "setup": [*unit.test_imports, f"from {own} import {unit.name}"],
        },
    }
    return probe_files(cases, setup, tree, fresh), CommandOracle(ORACLE_COMMAND)


def _task(
    unit: Unit,
    kind: Kind,
    instruction: str,
    workspace: dict[str, bytes],
    hidden: dict[str, bytes],
    oracle: CommandOracle,
    reference: Reference,
) -> Task:
    return Task(
        id=f"repo-{unit.repo}-{unit.name.lower().replace('_', '-')}-{kind.value}",
        source=Source.REPO,
        kind=kind,
        instruction=instruction,
        workspace=workspace,
        hidden=hidden,
        oracle=oracle,
        reference=reference,
        limits=REPO_LIMITS,
    )


def repair_task(unit: Unit) -> Task:
    buggy = unit.source.replace(unit.bug.old, unit.bug.new)
    path = module_path(unit)
    ask = _pick(
        unit,
        (
            f"Bug report: {unit.bug.report}\n\nThe code is `{unit.name}` in `{path}`. Fix the bug. Keep the "
            "existing tests passing and do not edit them.\n",
            f'A user of `{unit.repo}` writes: "{unit.bug.report}"\n\nTrack this down (start at '
            f"`{unit.name}` in `{path}`) and fix it without changing the tests.\n",
            f"Please fix `{unit.name}` (`{path}`). What we see: {unit.bug.report}\n\n"
            f"The fix should be minimal; "
            "the current tests must still pass.\n",
        ),
    )
    workspace = render_repo(_repo_units(unit), _sources(unit, buggy), _visible(unit, True))
    reference = Reference(files={path: _module_text(unit, unit.source)})
    hidden, oracle = _judged(unit, workspace, reference, unit.cases, _visible(unit, True), False)
    return _task(unit, Kind.REPAIR, ask, workspace, hidden, oracle, reference)


def build_task(unit: Unit) -> Task:
    path = module_path(unit)
    export = " and add it to `module.exports`" if unit.lang is Lang.JS else ""
    ask = _pick(
        unit,
        (
            f"Add `{unit.signature}` to `{path}`{export}. {unit.spec}\n",
            f"We need a new function in `{unit.repo}`: `{unit.signature}`, in `{path}`{export}.\n\n"
            f"{unit.spec}\n\n"
            "Write tests for it if you like; the existing tests must keep passing.\n",
            f"Implement `{unit.signature}` in `{path}`{export}.\n\nSpecification: {unit.spec}\n",
        ),
    )
    workspace = render_repo(_repo_units(unit), _sources(unit, None), _visible(unit, True))
    reference = Reference(files={path: _module_text(unit, unit.source)})
    hidden, oracle = _judged(unit, workspace, reference, unit.cases, _visible(unit, True), False)
    return _task(unit, Kind.BUILD, ask, workspace, hidden, oracle, reference)


def extend_task(unit: Unit) -> Task:
    path = module_path(unit)
    ask = _pick(
        unit,
        (
            f"Feature request for `{unit.name}` in `{path}`: {unit.feature.request} "
            f"Calls that do not use the "
            "new argument must behave exactly as before.\n",
            f"Extend `{unit.name}` (`{path}`): {unit.feature.request}\n\nKeep it backwards compatible; the "
            "existing tests must pass.\n",
            f"In `{unit.repo}`, change `{unit.name}` in `{path}` as follows: {unit.feature.request}\n",
        ),
    )
    workspace = render_repo(_repo_units(unit), _sources(unit, unit.source), _visible(unit, False))
    reference = Reference(files={path: _module_text(unit, unit.feature.source)})
    hidden, oracle = _judged(unit, workspace, reference, unit.feature.cases, _visible(unit, False), True)
    return _task(unit, Kind.EXTEND, ask, workspace, hidden, oracle, reference)


def qa_task(unit: Unit) -> Task:
    value = probe_value(unit)
    if unit.lang is Lang.JS:
        setup, form = f'`const {{ {unit.name} }} = require("./src/{unit.module}.js")`', "as JSON"
    else:
        imports = "; ".join((*unit.test_imports, f"from {unit.repo}.{unit.module} import {unit.name}"))
        setup, form = f"`{imports}`", "as a Python literal (for example `[1, 2]`, `'text'` or `3.5`)"
    ask = _pick(
        unit,
        (
            f"Question about this repository: after {setup}, what does `{unit.probe}` return? "
            f"Write the value to "
            f"`answer.txt` {form}. Do not change the code.\n",
            f"Read the code of `{unit.repo}` and tell me the result of `{unit.probe}` (set-up: {setup}). "
            f"Put just the value in `answer.txt`, {form}. Leave the code unchanged.\n",
        ),
    )
    checker = {".oracle/check_answer.py": checker_script(value)}
    return _task(
        unit,
        Kind.QA,
        ask,
        render_repo(_repo_units(unit), _sources(unit, unit.source), _visible(unit, False)),
        checker,
        CommandOracle("python -I .oracle/check_answer.py"),
        Reference(files={"answer.txt": (json.dumps(value) + "\n").encode()}),
    )


def repo_tasks() -> list[Task]:
    """All repo tasks, in a fixed order, with ``EVAL_PER_KIND`` of each kind in the eval split."""
    rng = np.random.default_rng(SEED)
    tasks: list[Task] = []
    for make in (repair_task, build_task, extend_task, qa_task):
        made = [make(unit) for unit in UNITS]
        held_out = {int(i) for i in rng.permutation(len(made))[:EVAL_PER_KIND]}
        tasks += [_with_split(t, Split.EVAL if i in held_out else Split.TRAIN) for i, t in enumerate(made)]
    return tasks


def _with_split(task: Task, split: Split) -> Task:
    from dataclasses import replace

    return replace(task, split=split)
