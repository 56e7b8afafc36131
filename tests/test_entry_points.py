"""Every ``python -m`` command a person runs: a bad value is one line ``error: <problem and fix>``, a nonzero
exit status and no traceback (``--debug`` shows it), found before Ray, vLLM or a model starts.

Each command runs as a subprocess with a bad value. A command that gets past its checks would start real
work, so the cases point ``RAY_ADDRESS`` at a closed port (no cluster starts) and the jobs whose check runs
at load add ``--print-config`` (they print and exit 0 instead of running): a check that stops firing fails
here quickly rather than training. ``test_every_entry_point_has_a_case`` finds the commands by their
``if __name__ == "__main__"`` block, so a new command without a case fails.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "serve", "jobs", "environments")
TIMEOUT_S = 120
ERROR_LINE = re.compile(r"^(\S+: )?error: ")
"""Ours (``error: ...``) or argparse's for a malformed argument (``prog: error: ...``)."""

NOT_USER_FACING = {
    # workers the project starts inside a sandbox with arguments it generates (stdlib only, no project)
    "environments.sandboxes.relay": "the sandbox's port relay, started by the backend",
    "environments.tasks.reward_guard": "the verify command's first process inside a sandbox",
    "environments.integrity.probe": "the output judge inside a sandbox (python -I .oracle/probe.py)",
    # takes no input: rewrites docs/metrics.md and the Grafana dashboard from the code
    "actors.metrics": "no arguments",
    # an unreadable or missing path is a line of its report and exit status 2, by design (tests/serve)
    "serve.audit": "reports bad paths",
}


@dataclass(frozen=True)
class Case:
    module: str
    args: tuple[str, ...]
    names: str
    """Text the error line must contain: the bad value or what is wrong with it."""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.module} {' '.join(self.args)}".replace("{tmp}/", "")


def vllm_parsers_known() -> bool:
    from actors.serving.parsers import known_tool_parsers

    return known_tool_parsers() is not None


CASES = [
    Case("jobs.train", ("serving.preset=nope", "--print-config"), "unknown model preset 'nope'"),
    Case("jobs.train", ("serving.overrides=[max_model_len=abc]", "--print-config"), "max_model_len='abc'"),
    Case("jobs.train", ("serving.overrides=[nope=1]", "--print-config"), "unknown key(s) nope"),
    Case("jobs.train", ("trainer.lora_rank=abc", "--print-config"), "trainer.lora_rank='abc'"),
    Case("jobs.evaluate", ("serving.preset=nope", "--print-config"), "unknown model preset 'nope'"),
    Case("jobs.smoke", ("train_overrides=[serving.preset=nope]", "out_dir={tmp}/out"), "preset 'nope'"),
    Case("jobs.ablation", ("eval_overrides=[tasks.max_tasks=abc]", "out_dir={tmp}/out"), "max_tasks='abc'"),
    Case(
        "jobs.learning_check", ("validation_overrides=[nope=1]", "out_dir={tmp}/out"), "unknown key(s) nope"
    ),
    Case("jobs.use", ("--push", "me/adapter", "--adapter", "{tmp}/adapter"), "offline mode is on"),
    Case("jobs.use", ("--harness", "pi", "--adapter", "{tmp}/nowhere"), "not an adapter folder"),
    Case("jobs.memory", ("nope",), "unknown train preset 'nope'"),
    Case("jobs.preflight", ("timeout_s=abc",), "timeout_s='abc'"),
    Case("jobs.sft", ("learning_rate=abc", "--print-config"), "learning_rate='abc'"),
    Case("jobs.sft", ("traces=[{tmp}/nowhere.jsonl]", "out_dir={tmp}/out"), "nowhere.jsonl does not exist"),
    Case("jobs.sft", ("model=nope", "traces=[{tmp}/file]", "out_dir={tmp}/out"), "model='nope'"),
    Case("serve.validity", ("--preset", "nope"), "unknown model preset 'nope'"),
    Case("actors.sft.tiny_agent", ("--agent", "nope"), "invalid choice: 'nope'"),
    Case("serve", ("--upstream", "notaurl"), "upstream='notaurl'"),
    Case("serve.check", ("{tmp}/nowhere.jsonl",), "cannot read"),
    Case("serve.replay", ("--task", "nope"), "--task nope"),
    Case(
        "environments.validate",
        ("--sandbox", "docker", "{tmp}"),
        "no Docker engine",
        {"DOCKER_HOST": "unix://{tmp}/no-docker.sock"},
    ),
    Case("environments.attempt", ("{tmp}/nowhere.jsonl",), "no such cases file"),
    Case("environments.demos", ("--out", "{tmp}/file"), "is a file"),
    Case(
        "environments.tasks.sessions",
        ("{tmp}/nowhere.json", "--repo", "{tmp}", "--out", "{tmp}/out"),
        "no such trace file",
    ),
    Case(
        "environments.tasks.notebooks",
        ("{tmp}/nowhere.ipynb", "--data", "{tmp}", "--out", "{tmp}/out"),
        "no such notebook",
    ),
    Case("environments.tiny_model", ("--out", "{tmp}/file"), "is a file"),
]
PARSER_CASE = Case(
    "jobs.train", ("serving.overrides=[tool_call_parser=nope]", "--print-config"), "tool_call_parser='nope'"
)


def entry_points() -> set[str]:
    """Modules under ``PACKAGES`` with a module-level ``if __name__ == "__main__"`` block."""
    found = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            body = ast.parse(path.read_text()).body
            if any(isinstance(node, ast.If) and _is_main_test(node.test) for node in body):
                name = ".".join(path.relative_to(REPO).with_suffix("").parts)
                found.add(name.removesuffix(".__main__"))
    return found


def _is_main_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def run_case(case: Case, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp / "file").write_text("not a folder\n")
    (tmp / "adapter").mkdir(exist_ok=True)
    (tmp / "adapter" / "README.md").write_text("---\nbase_model: base\n---\n")
    env = {
        **os.environ,
        "RAY_ADDRESS": "127.0.0.1:1",  # a check that stopped firing must not start a cluster
        **{k: v.replace("{tmp}", str(tmp)) for k, v in case.env.items()},
    }
    args = [a.replace("{tmp}", str(tmp)) for a in case.args]
    return subprocess.run(
        [sys.executable, "-m", case.module, *args, *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_every_entry_point_has_a_case():
    covered = {c.module for c in CASES} | set(NOT_USER_FACING)
    found = entry_points()
    assert found - covered == set(), "entry points without a bad-input case here (or a reason not to)"
    assert covered - found == set(), "cases or exclusions for modules that are no entry point"


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize(
    "case",
    [
        *(pytest.param(c, id=c.id) for c in CASES),
        pytest.param(
            PARSER_CASE,
            id=PARSER_CASE.id,
            marks=pytest.mark.skipif(not vllm_parsers_known(), reason="no vLLM here: parsers unchecked"),
        ),
    ],
)
def test_a_bad_value_is_one_error_line_without_a_traceback(case: Case, tmp_path: Path):
    done = run_case(case, tmp_path)
    output = done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0, output
    assert "Traceback" not in output, output
    assert lines and ERROR_LINE.match(lines[-1]), output
    assert case.names in lines[-1], output


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize(
    "case",
    [
        Case("serve.check", ("{tmp}/nowhere.jsonl",), "UsageError"),  # environments.errors.cli_main
        Case("jobs.train", ("serving.preset=nope", "--print-config"), "ConfigError"),  # jobs.cli.job_main
    ],
    ids=lambda c: c.module,
)
def test_debug_shows_the_traceback(case: Case, tmp_path: Path):
    done = run_case(case, tmp_path, "--debug")
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr and case.names in done.stderr, done.stderr
