"""The literal prefilter (`serve.literals`) never changes an answer: needles are in every match, and a
pattern's top-level alternatives match where the whole does.

Checked on each rule's own patterns against the dev cases' texts (their attacks match many of them), and
on constructs the reader must model or give up on.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest
import regex

import serve
from serve import literals, rx

DATA = Path(__file__).parent / "data"


def _patterns() -> list[rx.Pattern]:
    found: dict[tuple[str, int], rx.Pattern] = {}

    def visit(value: object, depth: int) -> None:
        if isinstance(value, rx.Pattern):
            found[(value.pattern, value.compiled.flags)] = value
        elif isinstance(value, tuple | list | frozenset | set) and depth < 3:
            for item in value:
                visit(item, depth + 1)
        elif isinstance(value, dict) and depth < 3:
            for item in value.values():
                visit(item, depth + 1)

    for info in pkgutil.walk_packages(serve.__path__, "serve."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            visit(value, 0)
    return list(found.values())


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        out = [value]
        if value[:1] in "{[":
            try:
                out += _strings(json.loads(value))
            except ValueError:
                pass
        return out
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _texts() -> list[str]:
    texts: set[str] = set()
    for path in sorted(DATA.glob("guard_dev*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                texts.update(_strings(case.get("messages")) + _strings(case.get("tool_call")))
    return sorted(texts)


PATTERNS = _patterns()
TEXTS = _texts()


def test_the_rules_patterns_mostly_get_needles():
    assert len(PATTERNS) > 100
    assert sum(p.needles is not None for p in PATTERNS) > len(PATTERNS) // 3


@pytest.mark.parametrize("pattern", [p for p in PATTERNS if p.needles], ids=lambda p: p.pattern[:40])
def test_every_match_holds_a_needle(pattern: rx.Pattern):
    for text in TEXTS:
        for m in pattern.compiled.finditer(text):
            folded = literals.folded(m[0])
            assert any(n in folded for n in pattern.needles), (pattern.pattern, m[0])


@pytest.mark.parametrize(
    "pattern",
    [p for p in PATTERNS if literals.branches(p.pattern, p.compiled.flags)],
    ids=lambda p: p.pattern[:40],
)
def test_alternatives_match_where_the_whole_does(pattern: rx.Pattern):
    parts = [
        regex.compile(b, pattern.compiled.flags)
        for b in literals.branches(pattern.pattern, pattern.compiled.flags)
    ]
    for text in TEXTS:
        assert any(p.search(text) for p in parts) == (pattern.compiled.search(text) is not None), text[:200]


def test_found_on_long_text_goes_by_alternative():
    pattern = rx.compile(r"\bdef test_\w+|\bassert\b|#\[test\]")
    text = "plain words, nothing to match. " * (rx.SPLIT_CHARS // 30 + 1)
    assert not pattern.found(text)
    assert pattern.found(text + "assert x")
    assert pattern.found(text + "#[test]")
    assert len(pattern._branches) == 3


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        (r"\bdef test_|\bassert\b", 0, {"def test_", "assert"}),
        (r"(?:configured|only reach)\b.{0,9}\bregistry", rx.I, {"configured", "only reach"}),
        (r"abcd+ef", 0, {"abcd"}),  # the run stops where a repeat could add more
        (r"x(?:abc)?yz", 0, None),  # an optional group requires nothing; runs under 3 don't count
        (r"(?=secret)\w+", 0, None),  # a lookahead's text is not in the match
        (r"(?P<n>token)=\d+", 0, {"token"}),
        (r"(?m:^name\s*=)", 0, {"name"}),
        (r"api[_-]key|token", rx.I, {"api", "token"}),
        (r"\x41bcd", 0, {"bcd"}),
        (r"k\u00e9y_name", rx.I, {"y_name"}),
        (r"a|b.*", 0, None),
        (r"[[:alpha:]]+secret", 0, None),  # a POSIX class is not modelled
        (r"(?x) secret", 0, None),  # verbose: whitespace is not literal
        (r"(a)secret\1", 0, {"secret"}),
        (r"\p{L}secret", 0, None),
        (r"secret", rx.X, None),
    ],
)
def test_needles(pattern: str, flags: int, expected: set[str] | None):
    found = literals.needles(pattern, flags)
    assert (None if found is None else set(found)) == expected


def test_folding_keeps_what_ignoring_case_matches():
    pattern = rx.compile(r"registry\s*=", rx.I)
    for text in ("REGİSTRY =", "regiſtry =", "\u212aey registry ="):
        long_text = text + " padding" * rx.NEEDLE_CHARS
        assert (pattern.search(long_text) is not None) == (pattern.compiled.search(long_text) is not None)


def test_branches():
    assert literals.branches(r"a(b|c)|d", 0) == ["a(b|c)", "d"]
    assert literals.branches(r"[|]x|y", 0) == ["[|]x", "y"]
    assert literals.branches(r"(a)|\1", 0) is None  # a back-reference ties the branches
    assert literals.branches(r"(?i)a|b", 0) is None  # so does a global flag
    assert literals.branches(r"abc", 0) is None
