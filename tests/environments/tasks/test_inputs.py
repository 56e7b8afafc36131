"""The judge's fresh inputs: every unit's generator draws valid, varied inputs that the reference answers
(mostly without raising), the same ones for the same seed; tasks carry them, and the leakage check rejects
a task whose hidden inputs are all on show."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace

import pytest

from environments.integrity import probe
from environments.tasks.answer_table import hidden_inputs, table_edits, visible_inputs
from environments.tasks.checks import check_no_leakage
from environments.tasks.shipped.inputs import GENERATORS, generator_source
from environments.tasks.shipped.probes import CHILD_SOURCE, SPEC_PATH, evaluate_in, js_probe_expression
from environments.tasks.shipped.repo_tasks import UNITS, _module_text, repo_tasks
from environments.tasks.shipped.repos import module_path
from environments.tasks.shipped.units import Lang, Unit

SEEDS = (1, 2, 3, 4, 5)
BROKEN = {"setup_failed", "unencodable", "other", "too_deep", "undefined"}


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in repo_tasks()}


def _drawn(unit: Unit, feature: bool) -> list[str]:
    spec = {"source": generator_source(unit.name), "call": f"gen_{unit.name}", "feature": feature, "count": 8}
    return [e for seed in SEEDS for e in probe.draw(spec, seed)]


def _reference(unit: Unit, feature: bool) -> bytes:
    source = unit.feature.source if feature else unit.source
    return _module_text(unit, source)


def _check_outputs(unit: Unit, feature: bool, exprs: list[str], outputs: list[dict]) -> None:
    kinds = Counter(o.get("t") for o in outputs)
    broken = [e for e, o in zip(exprs, outputs, strict=True) if o.get("t") in BROKEN][:3]
    assert not BROKEN & set(kinds), (unit.name, feature, kinds, broken)
    assert kinds["raised"] <= 0.3 * len(outputs), (unit.name, feature, kinds)
    assert len(set(exprs)) >= 20 and len({json.dumps(o, sort_keys=True) for o in outputs}) >= 2, unit.name


def test_every_unit_has_a_generator_and_a_seed_fixes_its_draw():
    assert {u.name for u in UNITS} == set(GENERATORS)
    unit = UNITS[0]
    spec = {"source": generator_source(unit.name), "call": f"gen_{unit.name}", "feature": False, "count": 8}
    assert probe.draw(spec, 7) == probe.draw(spec, 7)
    assert probe.draw(spec, 7) != probe.draw(spec, 8)


@pytest.mark.parametrize("unit", [u for u in UNITS if u.lang is Lang.PY], ids=lambda u: u.name)
def test_python_generators_draw_inputs_the_reference_answers(unit):
    for feature in (False, True):
        exprs = _drawn(unit, feature)
        setup = [*unit.test_imports, f"from {unit.repo}.{unit.module} import {unit.name}"]
        outputs = evaluate_in({module_path(unit): _reference(unit, feature)}, setup, exprs)
        _check_outputs(unit, feature, exprs, outputs)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_js_generators_draw_inputs_the_reference_answers():
    for unit in (u for u in UNITS if u.lang is Lang.JS):
        for feature in (False, True):
            exprs = _drawn(unit, feature)
            rel = module_path(unit)
            payload = {
                "modules": [[rel, [unit.name]]],
                "sources": {rel: _reference(unit, feature).decode()},
                "exprs": exprs,
            }
            got = probe._run_node(payload, CHILD_SOURCE.decode())
            assert got is not None, unit.name
            _check_outputs(unit, feature, exprs, got["outputs"])


def test_js_cases_become_the_expression_they_check():
    assert js_probe_expression("assert.deepStrictEqual(chunk([1, 2], 2), [[1, 2]]);") == "chunk([1, 2], 2)"
    assert js_probe_expression("assert.throws(() => chunk([1], 0), RangeError);") == "chunk([1], 0)"
    assert js_probe_expression("assert.strictEqual(f('a,b', \"(\"), 1);") == "f('a,b', \"(\")"
    with pytest.raises(ValueError):
        js_probe_expression("expect(chunk([1], 1)).toEqual([[1]]);")


def test_every_judged_repo_task_draws_inputs_and_the_reference_of_its_own_kind(tasks):
    judged = [t for t in tasks.values() if SPEC_PATH in t.hidden]
    assert len(judged) == 3 * len(UNITS)
    for task in judged:
        spec = json.loads(task.hidden[SPEC_PATH])
        assert spec["generated"]["feature"] is (task.kind.value == "extend"), task.id
        inputs = hidden_inputs(task)
        assert inputs.drawn and len(visible_inputs(task, inputs)) < len(inputs.fixed), task.id


def test_a_task_whose_hidden_inputs_are_all_visible_is_rejected_unless_it_draws_more(tasks):
    task = tasks["repo-textkit-slugify-repair"]
    assert check_no_leakage(task).passed
    spec = json.loads(task.hidden[SPEC_PATH])
    shown = "\n".join(p["expr"] for p in spec["probes"])
    leaky = replace(task, instruction=task.instruction + "\nExamples:\n" + shown)
    assert check_no_leakage(leaky).passed  # fresh inputs: a table of what is shown still fails
    del spec["generated"]
    fixed = replace(leaky, hidden={**task.hidden, SPEC_PATH: json.dumps(spec).encode()})
    result = check_no_leakage(fixed)
    assert not result.passed and "answer table" in result.reason
    hidden_only = replace(fixed, instruction=task.instruction)
    assert check_no_leakage(hidden_only).passed


def test_the_answer_table_covers_only_the_visible_inputs_and_wraps_the_judged_modules(tasks):
    task = tasks["repo-jsutils-chunk-extend"]
    seen = visible_inputs(task)
    assert seen and set(seen) < set(hidden_inputs(task).fixed)
    (path, data, _), *_ = table_edits(task, seen)
    assert path == "src/arrays.js" and task.reference.files[path] in data
    python = tasks["repo-ledger-split-evenly-build"]
    edits = list(table_edits(python, hidden_inputs(python).fixed))
    money = dict((path, data) for path, data, _ in edits)["ledger/money.py"]
    assert b"def split_evenly" in money and b"_HA_TABLE" in money
