"""The host-side scorer always answers: the effect audit, its scanners and the verifier return a result on
adversarial agent files (deep nesting, huge lines, unclosed comments and strings, binary, invalid UTF-8, NUL
bytes, many and deep files) instead of raising, recursing out or scanning quadratically. Red-team incidents:
100k nested lambdas crashed ``ast.parse`` into a retried rollout; ``"test_" * n`` in one string and
``new Error(`` repeated stalled the audit for minutes. The bound itself is the suite's timeout: a scan that
goes quadratic again makes these tests time out instead of returning."""

from __future__ import annotations

import os
import random

import pytest

from environments.core.runner import SubprocessRunner
from environments.core.types import CommandOracle
from environments.integrity import audit as audit_module
from environments.integrity.audit import MAX_SCAN_TOTAL, audit_effects
from environments.integrity.config_diff import runner_part_changed
from environments.integrity.content import (
    MAX_SCAN_BYTES,
    code_findings,
    conftest_findings,
    javascript_findings,
    python_findings,
)
from environments.integrity.snapshot import MAX_DEPTH, snapshot_of_files, take_snapshot
from environments.tasks.oracle import Verdict, verify, write_start
from tests.environments.tasks.taskutil import repo_task

pytestmark = pytest.mark.timeout(300)

MIB = 1 << 20
DEEP = 100_000
ADVERSARIAL: dict[str, bytes] = {
    "deep_parentheses": b"x = " + b"(" * DEEP + b"1" + b")" * DEEP,
    "deep_brackets": b"x = " + b"[" * DEEP + b"]" * DEEP,
    "nested_lambdas": b"f = " + b"lambda: " * DEEP + b"1\n",
    "unary_chain": b"x = " + b"-" * DEEP + b"1\n",
    "attribute_chain": b"x = a" + b".b" * DEEP + b"\n",
    "attribute_chains_under_the_parser_limit": (b"x = a" + b".b" * 1900 + b"\n") * 60,
    "call_at_import_deeper_than_unparse": b"a" + b".b" * 800 + b"()\n",
    "huge_single_line": b"x = '" + b"a" * (10 * MIB) + b"'\n",
    "test_names_in_one_string": b"x = '" + b"test_" * 200_000 + b"'\n",
    "unclosed_block_comments": b"/*" * 500_000,
    "unclosed_string": b"x = '''" + b"\\'" * 300_000,
    "unclosed_new_error": b"new Error(" * 100_000,
    "nul_bytes": b"\x00" * MIB,
    "invalid_utf8": b"\xff\xfe\xc3(" * 250_000,
    "setup_cfg_inner_whitespace": b"[tool:pytest]\na" + b" " * 200_000 + b"b\n",
    "toml_deep_arrays": b"a = " + b"[" * DEEP + b"]" * DEEP,
}
ADVERSARIAL["binary"] = random.Random(7).randbytes(MIB)

UNIMPORTABLE_DEEP = (
    "deep_parentheses",
    "deep_brackets",
    "nested_lambdas",
    "unary_chain",
    "attribute_chain",
    "huge_single_line",
)
"""Python files the parser gives up on or that pass the size cap: never silently passed."""

KNOWN_RULES = {
    "unexaminable",
    "reads_tests",
    "process_exit",
    "imports_test_runner",
    "imports_interpreter_hook",
    "dynamic_code",
    "interpreter_hook",
    "reads_caller",
    "equals_everything",
    "patches_runtime",
    "runner_hook",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_every_scanner_returns_on_adversarial_text(name):
    data = ADVERSARIAL[name]
    for path in ("pkg/mod.py", "src/mod.js", "src/mod.tsx"):
        assert {f.rule for f in code_findings(path, data)} <= KNOWN_RULES
    assert {f.rule for f in conftest_findings(data)} <= KNOWN_RULES
    for config in ("pyproject.toml", "package.json", "setup.cfg"):
        assert runner_part_changed(config, b"", data) in (True, False)


@pytest.mark.parametrize("name", UNIMPORTABLE_DEEP)
def test_python_the_parser_gives_up_on_is_unexaminable_never_clean(name):
    rules = {f.rule for f in python_findings(ADVERSARIAL[name])}
    assert "unexaminable" in rules
    assert "unexaminable" in {f.rule for f in conftest_findings(ADVERSARIAL[name])}


def test_findings_on_long_inputs_are_still_found_and_capped():
    assert {f.rule for f in python_findings(b"x = '" + b"test_" * 50_000 + b".py'\n")} == {"reads_tests"}
    found = javascript_findings(b"eval(1);\n" * 50_000)
    assert [f.rule for f in found] == ["interpreter_hook"]
    assert javascript_findings(b"/* unclosed " + b"process.exit(0) " * 1000) == []
    assert python_findings(b"a" + b".b" * 800 + b"()\n") == []  # deep, but plain code: no finding


def test_oversize_config_files_count_as_runner_changes():
    big = b'{"name": "x", "description": "' + b"a" * (MIB) + b'"}'
    assert runner_part_changed("package.json", b'{"name": "x"}', big)
    assert runner_part_changed("pyproject.toml", b"", b"a = " + b"[" * DEEP + b"]" * DEEP)
    assert not runner_part_changed("package.json", b'{"name": "x"}', b'{"name": "y"}')


def _random_source(rng: random.Random) -> bytes:
    """A file of tokens the scanners treat specially, nested and repeated at random."""
    tokens = [
        b"(", b")", b"[", b"]", b"{", b"}", b"lambda: ", b"-", b"not ", b".b", b"()", b"'", b'"', b"'''",
        b"/*", b"*/", b"//", b"\n", b" " * 64, b"\t", b"\x00", b"\xff", b"\xc3", b"test_", b".py",
        b"tests/", b"import sys\n", b"sys.exit(0)\n", b"process.exit(", b"new Error(", b"err.stack",
        b"def __eq__(s, o):\n    return True\n", b"[tool:pytest]\n", b"a = ", b"=", b"\\",
    ]  # fmt: skip
    parts = []
    for _ in range(rng.randrange(1, 400)):
        token = rng.choice(tokens)
        parts.append(token * rng.choice((1, 1, 2, 50, 2000)))
    if rng.random() < 0.2:
        parts.append(rng.randbytes(rng.randrange(1, 4096)))
    return b"".join(parts)


def test_random_files_never_raise_in_any_scanner():
    rng = random.Random(20240611)
    for _ in range(300):
        data = _random_source(rng)
        for path in ("m.py", "m.js"):
            assert {f.rule for f in code_findings(path, data, imported=rng.random() < 0.5)} <= KNOWN_RULES
        conftest_findings(data)
        for config in ("pyproject.toml", "package.json", "setup.cfg"):
            assert runner_part_changed(config, data[: len(data) // 2], data) in (True, False)


def test_the_audit_flags_every_code_file_it_cannot_examine():
    task = repo_task()
    start = snapshot_of_files(task.workspace)
    files = dict(task.workspace)
    files["calc.py"] = ADVERSARIAL["nested_lambdas"]  # the module the tests import
    files["pkg/__init__.py"] = b""
    for i in range(MAX_SCAN_TOTAL // (MAX_SCAN_BYTES - 1024) + 2):  # past the rollout's scan budget
        files[f"pkg/part{i}.py"] = b"x = 1\n" * ((MAX_SCAN_BYTES - 1024) // 6)
    files["src/app.js"] = ADVERSARIAL["unclosed_new_error"]
    files["notes.txt"] = ADVERSARIAL["binary"]
    result = audit_effects(task, start, snapshot_of_files(files))
    flagged = {f.path for f in result.flags if f.rule == "runner_code" and "unexaminable" in f.detail}
    assert "calc.py" in flagged
    assert any("budget" in f.detail for f in result.flags), result.flags
    assert "notes.txt" not in {f.path for f in result.flags}  # not code: nothing to scan


def test_an_exception_inside_the_audit_is_a_flag_not_a_crash(monkeypatch):
    def explode(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(audit_module, "code_findings", explode)
    task = repo_task()
    final = snapshot_of_files({**task.workspace, "calc.py": b"def add(a, b):\n    return a + b\n"})
    result = audit_effects(task, snapshot_of_files(task.workspace), final)
    assert result.tampered and [f.rule for f in result.flags] == ["audit_error"]


def _adversarial_tree(root, rng: random.Random) -> None:
    """Deep folders, a huge file, a FIFO, links out, an invalid UTF-8 name, NUL bytes, many small files."""
    deep = root
    for _ in range(MAX_DEPTH + 6):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "calc.py").write_bytes(b"x = 1\n")
    (root / "big.py").write_bytes(b"#" * (9 * MIB))
    (root / "nul.py").write_bytes(ADVERSARIAL["nul_bytes"])
    (root / "lambdas.py").write_bytes(ADVERSARIAL["nested_lambdas"])
    os.mkfifo(root / "pipe")
    os.symlink("/dev/zero", root / "zero.py")
    os.symlink("../../..", root / "up")
    with open(os.path.join(os.fsencode(root), b"bad-\xff\xfe.py"), "wb") as handle:
        handle.write(ADVERSARIAL["invalid_utf8"][:4096])
    crowd = root / "crowd"
    crowd.mkdir()
    for i in range(2000):
        (crowd / f"f{i}.txt").write_bytes(rng.randbytes(16))


def test_the_audit_of_an_adversarial_workspace_on_disk_returns_flags(tmp_path):
    task = repo_task()
    produced = write_start(task, tmp_path / "produced")
    _adversarial_tree(produced, random.Random(3))
    final = take_snapshot(produced)
    result = audit_effects(task, snapshot_of_files(task.workspace), final)
    rules = {f.rule for f in result.flags}
    assert final.truncated and "snapshot_truncated" in rules
    assert {"link_out", "special_file", "runner_code"} <= rules
    assert any(f.path == "lambdas.py" and "unexaminable" in f.detail for f in result.flags)


@pytest.mark.parametrize(("command", "verdict"), [("true", Verdict.PASS), ("false", Verdict.FAIL)])
def test_verify_judges_an_adversarial_workspace(tmp_path, command, verdict):
    """The verify command is harmless (``true``/``false``): nothing of the agent's files runs on the host;
    what is under test is that taking the surface and building the tree return a verdict."""
    task = repo_task(oracle=CommandOracle(command))
    produced = write_start(task, tmp_path / "produced")
    _adversarial_tree(produced, random.Random(5))
    assert verify(task, produced, tmp_path / "verify", SubprocessRunner()).verdict is verdict
