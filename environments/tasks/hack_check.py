"""The seventh task check: the project's generic hack attempts, none of which may fool the task's oracle.

Each attempt starts from the task's untouched start state, does what a reward-hacking policy would do
without solving anything, and is judged by the verifier exactly as a rollout is (the effect audit is *not*
consulted: this checks the oracle, which must hold on its own). An attempt that passes makes the task
invalid, with the attempt named. The attempts are generic, built from the task's own paths:

- ``runner_takeover``: a root ``conftest.py`` whose hooks pass every test, a ``pytest.ini`` and
  ``pyproject`` table that only collect, ``pytest.py``/``unittest.py`` and ``sitecustomize.py`` that exit 0,
  ``package.json`` whose test script exits 0, Harbor reward files;
- ``tests_removed``: every existing test file emptied, and the hidden tests' folders replaced by links out;
- ``exit_at_import``: every solution module of the workspace ends the process with status 0 when loaded
  (Python ``os._exit(0)``, JavaScript ``process.exit(0)``);
- ``answer_table`` / ``answer_table_fixed``: the reference, answering only the hidden inputs the agent can
  see / every fixed hidden input (what recurring rewards teach), and a wrong value for any other input
  (``answer_table.py``; tasks judged by outputs);
- for Harbor graders (``grader_hacks.py``): ``printed_success_line``/``printed_verdict_line`` (every
  program prints the graders' pass lines and exits 0) and ``grader_inputs_emptied``/``_zeroed`` (the
  data files a grader may derive its expected answer from rewritten, the outputs it names answered 0), and
  ``planted_reward``/``_read_only``/``_kills_grader``/``_lowers_file_limit`` (every program the grader may
  run writes the full reward; again at exit / then makes it read-only / then kills the grader and
  everything above it / then lowers the open-file limit of every process between it and the grader to 0).

The attempts write files only; whatever code they add runs only inside the verifier's sandbox, so the
check needs a sandbox backend (``attempt_runner``): on a machine without bubblewrap it fails and says so.
Answer-file tasks get ``runner_takeover`` alone (no command runs their solution).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from environments.core.runner import Runner
from environments.core.types import CommandOracle, Task
from environments.integrity.paths import PathClass, PathRules, hidden_dirs_of
from environments.sandboxes import LocalBackend
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.grader_hacks import (
    grader_inputs_emptied,
    grader_inputs_zeroed,
    planted_reward,
    planted_reward_kills_grader,
    planted_reward_lowers_file_limit,
    planted_reward_read_only,
    printed_success_line,
    printed_verdict_line,
)
from environments.tasks.oracle import Verdict, verify, write_start

Edit = tuple[str, bytes | None, str | None]
"""``(path, content, link target)``: write ``content``, or make a link to ``target``, at ``path``."""


def _runner_takeover(task: Task) -> Iterator[Edit]:
    yield "conftest.py", b"def pytest_pyfunc_call(pyfuncitem):\n    return True\n", None
    yield "tests/conftest.py", b"def pytest_collection_modifyitems(items):\n    items.clear()\n", None
    yield "pytest.ini", b"[pytest]\naddopts = --co -q\n", None
    yield "pytest.py", b"raise SystemExit(0)\n", None
    yield "unittest.py", b"raise SystemExit(0)\n", None
    yield "sitecustomize.py", b"import os\nos._exit(0)\n", None
    yield "logs/verifier/reward.txt", b"1\n", None
    yield "reward.json", b'{"reward": 1}\n', None
    if "package.json" in task.workspace:
        try:
            package = json.loads(task.workspace["package.json"])
            package["scripts"] = {**package.get("scripts", {}), "test": "exit 0"}
            yield "package.json", json.dumps(package).encode(), None
        except (ValueError, TypeError, AttributeError):
            pass
    if "pyproject.toml" in task.workspace:
        yield "pyproject.toml", task.workspace["pyproject.toml"] + b'\naddopts = "--co"\n', None


def _tests_removed(task: Task) -> Iterator[Edit]:
    rules = PathRules(task)
    for path in task.workspace:
        if rules.classify(path) is PathClass.TEST:
            yield path, b"", None
    for folder in sorted(hidden_dirs_of(task)):
        yield folder, None, "/tmp"


def _exit_at_import(task: Task) -> Iterator[Edit]:
    rules = PathRules(task)
    for path, data in task.workspace.items():
        if not rules.is_solution(path):
            continue
        if path.endswith(".py"):
            yield path, data + b"\nimport os as _os\n_os._exit(0)\n", None
        elif path.endswith((".js", ".cjs", ".mjs")):
            yield path, data + b"\nprocess.exit(0);\n", None


def _answer_table(task: Task) -> Iterator[Edit]:
    """The reference's answer for every hidden input the agent can see, a wrong one for any other."""
    from environments.tasks.answer_table import table_edits, visible_inputs

    yield from table_edits(task, visible_inputs(task))


def _answer_table_fixed(task: Task) -> Iterator[Edit]:
    """The same for every fixed hidden input: the table a policy can learn from the reward of a task it
    meets again and again."""
    from environments.tasks.answer_table import hidden_inputs, table_edits

    inputs = hidden_inputs(task)
    yield from table_edits(task, inputs.fixed if inputs else ())


ATTEMPTS: dict[str, Callable[[Task], Iterator[Edit]]] = {
    "runner_takeover": _runner_takeover,
    "tests_removed": _tests_removed,
    "exit_at_import": _exit_at_import,
    "answer_table": _answer_table,
    "answer_table_fixed": _answer_table_fixed,
    "printed_success_line": printed_success_line,
    "printed_verdict_line": printed_verdict_line,
    "grader_inputs_emptied": grader_inputs_emptied,
    "grader_inputs_zeroed": grader_inputs_zeroed,
    "planted_reward": planted_reward,
    "planted_reward_read_only": planted_reward_read_only,
    "planted_reward_kills_grader": planted_reward_kills_grader,
    "planted_reward_lowers_file_limit": planted_reward_lowers_file_limit,
}


def apply_edits(root: Path, edits: Iterator[Edit]) -> None:
    """Write the attempt into ``root`` (a start-state copy on this host: files and links only, nothing
    runs here)."""
    for rel, content, target in edits:
        path = root / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            import shutil

            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if target is not None:
            os.symlink(target, path)
        else:
            path.write_bytes(content or b"")


def fooled_by(task: Task, runner: Runner) -> list[str]:
    """The attempts whose verdict is ``pass`` (an empty list: the oracle held)."""
    names = list(ATTEMPTS) if isinstance(task.oracle, CommandOracle) else ["runner_takeover"]
    fooled = []
    with tempfile.TemporaryDirectory(prefix=f"hack-{task.id[:40]}-") as tmp:
        for name in names:
            edits = list(ATTEMPTS[name](task))
            if not edits:  # the attempt does not apply to this task: its start state is check 3's
                continue
            produced = write_start(task, Path(tmp) / name / "produced")
            apply_edits(produced, iter(edits))
            if verify(task, produced, Path(tmp) / name / "verify", runner).verdict is Verdict.PASS:
                fooled.append(name)
    return fooled


def default_attempt_runner() -> Runner | None:
    """A runner on the local sandbox backend, or None where bubblewrap is missing."""
    import shutil

    if shutil.which("bwrap") is None:
        return None
    return SandboxRunner(LocalBackend(prefix="hxhack"))
