"""Code that takes the judging out of checks: assertions made no-ops, failures caught and logged.

``assert[k] = () => {}`` in a preload, ``global.test`` wrapped to swallow what it throws, RSpec's
``ExpectationNotMetError`` rescued in a prepended module, ``except AssertionError: pass``: a file holding
such code passes every test it is loaded into, whatever the code under test does. Written, it is
tampering (``rules.tamper``); loaded into a later check run (``rules.runs``), it is judged again there,
because the call that wires or runs it may be the only one a guard sees.
"""

from __future__ import annotations

import functools

from .. import rx

NEUTRALIZES = rx.compile(
    r"\bassert(?:\.strict)?\s*\[\s*\w+\s*\]\s*=(?!=)|\bassert(?:\.strict)?\.\w+\s*=(?!=)"
    r"|\b(?:global|globalThis|window)\.(?:expect|assert|it|test|describe)\s*=(?!=)"
    r"|\brescue\s+(?:::)?(?:RSpec::Expectations::ExpectationNotMetError|Minitest::Assertion"
    r"|Test::Unit::AssertionFailedError)\b|\bExpectationTarget\.prepend\b|\bRSpec::Expectations\.\w+\s*="
    r"|\bexcept\s+\(?\s*(?:\w+\.)*AssertionError\b[^\n:]*:\s*(?:#[^\n]*)?\n?\s*(?:pass|return|continue|\.\.\.)\b"
    r"|\b(?:unittest\.)?TestCase\.(?:assert\w*|fail\w*)\s*=(?!=)"
    r"|\bsetattr\(\s*(?:unittest\.)?(?:TestCase|assert\w*|pytest|chai|expect)\b"
    r"|\bObject\.assign\(\s*(?:assert|expect|chai|should)\b|\boverwrite(?:Method|Property|ChainableMethod)\("
    r"|\bexpect\.extend\(\s*\{(?s:.{0,400}?)\bpass\s*:\s*true\b"
    r"|\bforce_result\(|\bpytest_pyfunc_call\b"
)
"""Assertions or test bodies replaced so that a failure no longer fails."""


@functools.lru_cache(maxsize=256)
def neutralizes_checks(text: str) -> bool:
    """Cached by text: every call asks it of every file the session kept (a string's hash is cached)."""
    return NEUTRALIZES.search(text) is not None
