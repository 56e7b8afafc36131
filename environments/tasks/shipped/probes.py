"""The output-only oracle of the Python repo tasks: test cases turned into probes with reference outputs.

Each test case (``expr == expected``, a boolean expression, or ``raises:Error:expr``) becomes a probe: the
expression whose value the solution must produce (the left side of ``==``, else the whole expression).
Its expected output is computed here, once, from the reference solution, with the same encoder the judge
uses (``environments.integrity.probe``), and checked against the case itself so a probe can never be
laxer than its test. The hidden files are the judge script and the spec; the oracle command is
``python -I .oracle/probe.py`` (see that module for why the comparison runs in a process of its own).
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
import tempfile
from pathlib import Path

from environments.integrity import probe as judge

ORACLE_COMMAND = "python -I .oracle/probe.py"
JUDGE_PATH = ".oracle/probe.py"
SPEC_PATH = ".oracle/probes.json"
JUDGE_SOURCE = Path(judge.__file__).read_bytes()


def probe_expression(case: str) -> tuple[str, str | None]:
    """``(expression, raised error name or None)`` for a Python test case."""
    if case.startswith("raises:"):
        _, error, expr = case.split(":", 2)
        return expr, error
    tree = ast.parse(case, mode="eval").body
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.Eq):
        return ast.get_source_segment(case, tree.left) or case, None
    return case, None


def evaluate_in(tree: dict[str, bytes], setup: list[str], exprs: list[str]) -> list[dict]:
    """``judge.evaluate`` on a workspace written to a temporary folder, in this process; every module it
    imported is forgotten afterwards, so the next tree's package of the same name is imported afresh."""
    before = set(sys.modules)
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        for rel, data in tree.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_bytes(data)
        sys.path.insert(0, tmp)
        importlib.invalidate_caches()
        try:
            return judge.evaluate(setup, exprs)
        finally:
            sys.path.remove(tmp)
            for name in set(sys.modules) - before:
                del sys.modules[name]


def probe_files(
    cases: list[tuple[str, str]], setup: list[str], reference_tree: dict[str, bytes]
) -> dict[str, bytes]:
    """The hidden files for ``cases`` (``(label, case)`` pairs): the judge and its spec, with every
    expected output taken from ``reference_tree`` (the workspace with the reference applied)."""
    exprs = [probe_expression(case)[0] for _, case in cases]
    whole = [case.split(":", 2)[2] if case.startswith("raises:") else case for _, case in cases]
    outputs = evaluate_in(reference_tree, setup, exprs + whole)
    expected, verdicts = outputs[: len(exprs)], outputs[len(exprs) :]
    probes = []
    for (label, case), expr, want, check in zip(cases, exprs, expected, verdicts, strict=True):
        error = probe_expression(case)[1]
        if error is not None:
            ok = want.get("t") == "raised" and error in want.get("types", [])
        else:
            ok = check == {"t": "bool", "v": True}
        if not ok:
            raise ValueError(f"probe {label}: the reference does not satisfy {case!r} ({want})")
        probes.append({"id": label, "expr": expr, "expected": want})
    lines = ",\n  ".join(json.dumps(p, sort_keys=True) for p in probes)
    spec = f'{{"setup": {json.dumps(setup)},\n "probes": [\n  {lines}\n ]}}\n'
    return {JUDGE_PATH: JUDGE_SOURCE, SPEC_PATH: spec.encode()}
