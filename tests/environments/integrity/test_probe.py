"""The output judge (``environments/integrity/probe.py``) with fresh inputs and its Node child: the
reference passes; an answer table of every fixed input passes only a judge that draws nothing; a seed
reproduces a run; Node agent code that exits early, prints a fake result or returns look-alike objects
fails. Agent-side code runs only in the sandbox."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from environments.integrity.probe import draw, load_reference, same
from environments.tasks.answer_table import hidden_inputs, table_edits
from environments.tasks.hack_check import apply_edits
from environments.tasks.layout import write_files
from environments.tasks.oracle import Verdict, apply_reference, verify, write_start
from environments.tasks.shipped.probes import SPEC_PATH
from environments.tasks.shipped.repo_tasks import repo_tasks

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def tasks():
    wanted = ("repo-textkit-slugify-repair", "repo-jsutils-chunk-repair", "repo-jsutils-uniqby-extend")
    return {t.id: t for t in repo_tasks() if t.id in wanted}


@pytest.fixture
def runner(tmp_path):
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(tmp_path / "boxes", prefix="hxprobe"))


def _without_draws(task):
    spec = json.loads(task.hidden[SPEC_PATH])
    del spec["generated"]
    return replace(task, hidden={**task.hidden, SPEC_PATH: json.dumps(spec).encode()})


def test_plain_javascript_objects_compare_by_sorted_data_and_exact_kind():
    want = {"t": "object", "v": [["a", {"t": "num", "v": 1}], ["b", {"t": "list", "v": []}]]}
    assert same(json.loads(json.dumps(want)), want)
    assert not same({"t": "object", "v": [["a", {"t": "num", "v": 1}]]}, want)
    assert not same({"t": "other"}, want) and not same({"t": "num", "v": "-0"}, {"t": "num", "v": 0})


def test_the_reference_cannot_replace_a_module_the_judge_uses():
    with pytest.raises(ImportError):
        load_reference({"json": "x = 1\n"})


def test_a_seed_reproduces_a_judge_run_and_is_printed(tasks, tmp_path):
    task = tasks["repo-textkit-slugify-repair"]  # the start state: our own buggy code, no hack
    spec = json.loads(task.hidden[SPEC_PATH])
    assert draw(spec["generated"], 11) == draw(spec["generated"], 11) != draw(spec["generated"], 12)
    runs = []
    for attempt in range(2):
        root = tmp_path / f"run{attempt}"
        write_files(root, {**task.workspace, **task.hidden})
        cmd = [sys.executable, "-I", ".oracle/probe.py", "--seed", "11"]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and not (root / SPEC_PATH).exists()
        runs.append(done.stdout)
    assert runs[0] == runs[1] and "seed 11" in runs[0].splitlines()[-1]


@needs_bwrap
@pytest.mark.parametrize("task_id", ["repo-textkit-slugify-repair", "repo-jsutils-chunk-repair"])
def test_an_answer_table_of_every_fixed_input_fails_only_because_of_the_drawn_inputs(
    tasks, runner, tmp_path, task_id
):
    task = tasks[task_id]
    reference = tmp_path / "reference"
    apply_reference(task, reference, runner)
    run = verify(task, reference, tmp_path / "v-ref", runner)
    assert run.verdict is Verdict.PASS and "seed" in run.result.output_tail
    table = write_start(task, tmp_path / "table")
    apply_edits(table, table_edits(task, hidden_inputs(task).fixed))
    run = verify(task, table, tmp_path / "v-table", runner)
    assert run.verdict is Verdict.FAIL and re.search(r"seed \d+", run.reason), run.reason
    assert "gen_" in run.result.output_tail and "hidden_" not in run.result.output_tail
    assert verify(_without_draws(task), table, tmp_path / "v-fixed", runner).verdict is Verdict.PASS


@needs_bwrap
@needs_node
@pytest.mark.parametrize(
    "tail",
    [
        "\nprocess.exit(0);\n",
        "\nprocess.on('exit', () => { process.exitCode = 0; });\n"
        "process.stdout.write('ok 1\\n# pass 9\\n');\n"
        "throw new Error('boom');\n",
        # look-alikes: a proxy of the right array, a getter, an object whose toJSON/valueOf lie
        "\nconst real = module.exports.chunk;\nmodule.exports.chunk = (...a) => new Proxy(real(...a), {});\n",
        "\nconst real = module.exports.chunk;\nmodule.exports.chunk = (...a) => real(...a).map((c) => "
        "Object.defineProperty({}, 'length', { get: () => c.length }));\n",
        "\nmodule.exports.chunk = () => ({ toJSON: () => [[1, 2], [3, 4], [5]], valueOf: () => 1 });\n",
        # write a plausible verdict to every descriptor, then exit before the judge's child can
        "\nconst fs = require('fs');\nfor (let fd = 3; fd < 64; fd++) { try { fs.writeSync(fd, "
        "JSON.stringify({ outputs: [] })); fs.closeSync(fd); } catch (e) {} }\nprocess.exit(0);\n",
    ],
    ids=["exit", "stdout-and-exit-listener", "proxy", "getter", "lying-tojson", "fd-forgery"],
)
def test_node_agent_code_that_fakes_or_cuts_its_output_fails(tasks, runner, tmp_path, tail):
    task = tasks["repo-jsutils-chunk-repair"]
    produced = tmp_path / "produced"
    apply_reference(task, produced, runner)
    path = produced / "src" / "arrays.js"
    path.write_text(path.read_text() + tail)
    run = verify(task, produced, tmp_path / "verify", runner)
    assert run.verdict is Verdict.FAIL, run.reason


@needs_bwrap
@needs_node
def test_a_broken_reference_is_caught_by_the_cases_own_assertions(tasks, runner, tmp_path):
    task = tasks["repo-jsutils-uniqby-extend"]
    spec = json.loads(task.hidden[SPEC_PATH])
    path = next(iter(spec["reference"]))
    spec["reference"][path] = spec["reference"][path].replace("!seen.has(k)", "seen.has(k) || true")
    broken = replace(task, hidden={**task.hidden, SPEC_PATH: json.dumps(spec).encode()})
    produced = tmp_path / "produced"
    apply_reference(task, produced, runner)
    run = verify(broken, produced, tmp_path / "verify", runner)
    assert run.verdict is Verdict.FAIL and "reference" in run.reason, run.reason
    assert Path(produced / "src" / "arrays.js").is_file()
