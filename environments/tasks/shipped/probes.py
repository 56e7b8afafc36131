"""The output-only oracle of the repo tasks: test cases turned into probes with reference outputs.

Each test case (``expr == expected``, a boolean expression, or ``raises:Error:expr``) becomes a probe: the
expression whose value the solution must produce (the left side of ``==``, else the whole expression).
Its expected output is computed here, once, from the reference solution, with the same encoder the judge
uses (``environments.integrity.probe``), and checked against the case itself so a probe can never be
laxer than its test. The hidden files are the judge script and the spec; the oracle command is
``python -I .oracle/probe.py`` (see that module for why the comparison runs in a process of its own).

A spec can also carry a generator (``inputs.py``) and the reference module's source: the judge then draws
fresh inputs at every verification and computes their outputs from that source. JS units get the same
judge with a Node child (``js_probe_files``): each ``assert.*`` case becomes the expression it checks plus
the statement itself, which the judge runs against the reference at verification time.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
import tempfile
from pathlib import Path

from environments.integrity import probe as judge

ORACLE_COMMAND = "python -I .oracle/probe.py"
NODE_ORACLE_COMMAND = "python -I .oracle/probe.py .oracle/probes.json"
"""The same judge for the JS repos; a command of its own so that tools can tell the two apart."""
JUDGE_PATH = ".oracle/probe.py"
SPEC_PATH = ".oracle/probes.json"
CHILD_PATH = ".oracle/probe_child.cjs"
JUDGE_SOURCE = Path(judge.__file__).read_bytes()
CHILD_SOURCE = (Path(judge.__file__).parent / "probe_child.cjs").read_bytes()
AT_VERIFY = {"t": "at_verify"}
"""A JS probe's expected output: computed by the judge from the reference at each verification (a kind
no value decodes to, so tools that rewrite expected values leave these probes alone)."""


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
    cases: list[tuple[str, str]],
    setup: list[str],
    reference_tree: dict[str, bytes],
    fresh: dict | None = None,
) -> dict[str, bytes]:
    """The hidden files for ``cases`` (``(label, case)`` pairs): the judge and its spec, with every
    expected output taken from ``reference_tree`` (the workspace with the reference applied). ``fresh``
    (``{"generated": ..., "reference": ...}``, see ``environments.integrity.probe``) adds inputs the judge
    draws at each run."""
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
    return {JUDGE_PATH: JUDGE_SOURCE, SPEC_PATH: _spec({"setup": setup}, probes, fresh)}


def _spec(head: dict, probes: list[dict], fresh: dict | None) -> bytes:
    """The spec's text: one probe a line (readable in a diff), the generator and reference last."""
    lines = ",\n  ".join(json.dumps(p, sort_keys=True) for p in probes)
    tail = "".join(f',\n "{k}": {json.dumps(v, sort_keys=True)}' for k, v in (fresh or {}).items())
    heads = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in head.items())
    return f'{{{heads},\n "probes": [\n  {lines}\n ]{tail}}}\n'.encode()


def _js_args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose ``(`` is at ``start`` in JavaScript ``text``, and the
    index after its ``)``. Knows strings, template literals and brackets; enough for test cases."""
    depth, i, args, begin, quote = 0, start, [], start + 1, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[begin:i].strip())
                return [a for a in args if a], i + 1
        elif c == "," and depth == 1:
            args.append(text[begin:i].strip())
            begin = i + 1
        i += 1
    raise ValueError(f"unbalanced call in {text!r}")


def js_probe_expression(case: str) -> str:
    """The expression a JS case checks: ``assert.X(actual, ...)``'s ``actual``, or the body of
    ``assert.throws(() => body, ...)``."""
    head = re.match(r"\s*assert\.(\w+)\(", case)
    if head is None:
        raise ValueError(f"not an assert.* statement: {case!r}")
    args, _ = _js_args(case, head.end() - 1)
    if head.group(1) == "throws":
        arrow = re.match(r"\(\s*\)\s*=>\s*", args[0])
        if arrow is None or args[0][arrow.end() :].startswith("{"):
            raise ValueError(f"assert.throws needs an arrow with an expression body: {case!r}")
        return args[0][arrow.end() :]
    return args[0]


def js_probe_files(
    cases: list[tuple[str, str]],
    modules: list[tuple[str, list[str]]],
    reference_tree: dict[str, bytes],
    generated: dict | None = None,
) -> dict[str, bytes]:
    """The hidden files of a JS task judged by outputs: the judge, its Node child and a spec whose probes
    hold the expression and the case itself (``check``); the expected outputs are computed by the judge
    from ``reference`` (the sources of ``modules`` in ``reference_tree``) at every verification."""
    probes = [
        {"id": label, "expr": js_probe_expression(case), "check": case, "expected": AT_VERIFY}
        for label, case in cases
    ]
    reference = {path: reference_tree[path].decode() for path, _ in modules}
    fresh = {"reference": reference, **({"generated": generated} if generated else {})}
    spec = _spec({"lang": "js", "modules": [[p, n] for p, n in modules]}, probes, fresh)
    return {JUDGE_PATH: JUDGE_SOURCE, SPEC_PATH: spec, CHILD_PATH: CHILD_SOURCE}
