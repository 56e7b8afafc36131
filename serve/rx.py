"""Regular expressions with a time limit: every match the guard runs stops at a deadline.

The guard matches patterns against text the model wrote. With the stdlib `re`, a pattern that
backtracks (`[\\w.-]*://` over a megabyte of `a.a.a.`) can hold one check for minutes, and one
model output would then freeze the guard for every session. This module is the only way the
guard's rules match text: it wraps the `regex` module (same syntax as `re`), whose matcher
takes a `timeout`, and passes it the time left in the current check's budget (`budget(s)`), or
`DEFAULT_TIMEOUT_S` outside one. A match that runs out of time raises `BudgetExceeded`; the
engine turns it into an unknown, which blocks (fail closed).

On long text a pattern first looks for its needles (`serve.literals`): literals one of which any
match contains. Where none is there the answer (no match) comes without running the matcher; the
answers are the same, a tool result's fold just costs a fraction. `found` answers "does it match"
by each top-level alternative on its own, which the matcher scans for by its leading literal: a
long alternation is many times faster so.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import regex

from . import literals

I = IGNORECASE = regex.IGNORECASE  # noqa: E741 - mirrors re.I
M = MULTILINE = regex.MULTILINE
S = DOTALL = regex.DOTALL
X = VERBOSE = regex.VERBOSE
DEFAULT_TIMEOUT_S = 1.0
"""Per-match limit when no check budget is active (folding history, the CLI, tests)."""
NEEDLE_CHARS = 2048
"""Text this long is first searched for a pattern's needles (on shorter text the matcher is quick)."""
SPLIT_CHARS = 4096
"""Text this long is matched by `found` one top-level alternative at a time."""

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("guard_deadline", default=None)


class BudgetExceeded(TimeoutError):
    """A match ran past the check's deadline."""


def remaining() -> float:
    """Seconds left in the current budget (at least a millisecond, so a match can start)."""
    deadline = _deadline.get()
    if deadline is None:
        return DEFAULT_TIMEOUT_S
    left = deadline - time.monotonic()
    if left <= 0:
        raise BudgetExceeded("guard check budget spent")
    return max(left, 0.001)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Every match inside shares one deadline `seconds` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, timeout=remaining(), **kwargs)
    except TimeoutError as exc:
        raise BudgetExceeded("guard pattern match ran out of time") from exc


_last_folded: tuple[str, str] = ("", "")


def _folded(text: str) -> str:
    """`literals.folded(text)`, kept for the last text: a fold runs a dozen patterns over the same one."""
    global _last_folded
    last = _last_folded
    if last[0] is text:
        return last[1]
    folded = literals.folded(text)
    _last_folded = (text, folded)
    return folded


class Pattern:
    """A compiled pattern whose methods take the time limit from the current budget."""

    __slots__ = ("_branches", "compiled", "needles", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.compiled = regex.compile(pattern, flags)
        self.pattern = pattern
        self.needles = literals.needles(pattern, self.compiled.flags)
        self._branches: tuple[Pattern, ...] | None = None

    def _ruled_out(self, text: str) -> bool:
        """No match can be in `text`: it is long and holds none of the needles."""
        return (
            self.needles is not None
            and len(text) >= NEEDLE_CHARS
            and literals.absent(self.needles, _folded(text))
        )

    def _split(self) -> tuple[Pattern, ...]:
        if self._branches is None:
            parts = literals.branches(self.pattern, self.compiled.flags) or []
            self._branches = tuple(Pattern(p, self.compiled.flags) for p in parts)
        return self._branches

    def found(self, text: str) -> bool:
        """Whether the pattern matches somewhere in `text` (`search(text) is not None`)."""
        if self._ruled_out(text):
            return False
        if len(text) >= SPLIT_CHARS and self._split():
            return any(branch.found(text) for branch in self._branches)
        return _timed(self.compiled.search, text) is not None

    def _none_in(self, text: str) -> bool:
        """No match in the whole of `text`, by `found` on long text with alternatives (all matches are
        wanted where none is the usual answer: a scan per alternative costs less than one of the whole)."""
        if len(text) >= SPLIT_CHARS and self._split():
            return not self.found(text)
        return self._ruled_out(text)

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self._ruled_out(text):
            return None
        return _timed(self.compiled.search, text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self._ruled_out(text):
            return None
        return _timed(self.compiled.match, text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        if self._ruled_out(text):
            return None
        return _timed(self.compiled.fullmatch, text, pos, endpos)

    def finditer(self, text: str) -> list[Any]:
        """All matches, as a list (the whole scan runs under the time limit)."""
        if self._none_in(text):
            return []
        return _timed(lambda timeout: list(self.compiled.finditer(text, timeout=timeout)))

    def findall(self, text: str) -> list[Any]:
        if self._none_in(text):
            return []
        return _timed(self.compiled.findall, text)

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        if self._ruled_out(text):
            return text
        return _timed(self.compiled.sub, repl, text, count)

    def split(self, text: str, maxsplit: int = 0) -> list[str]:
        if self._ruled_out(text):
            return [text]
        return _timed(self.compiled.split, text, maxsplit)


@functools.lru_cache(maxsize=512)
def compile(pattern: str, flags: int = 0) -> Pattern:  # noqa: A001 - mirrors re.compile
    return Pattern(pattern, flags)


def search(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).search(text)


def match(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).match(text)


def fullmatch(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).fullmatch(text)


def finditer(pattern: str, text: str, flags: int = 0) -> list[Any]:
    return compile(pattern, flags).finditer(text)


def sub(pattern: str, repl: Any, text: str, count: int = 0, flags: int = 0) -> str:
    return compile(pattern, flags).sub(repl, text, count)


def split(pattern: str, text: str, maxsplit: int = 0, flags: int = 0) -> list[str]:
    return compile(pattern, flags).split(text, maxsplit)


escape = regex.escape
