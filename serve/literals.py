"""Literals one of which is in every match of a pattern: a cheap proof that a long text can't match.

The matcher (`serve.rx`) costs 20-100 ns a character, so a dozen patterns over a 64 KB tool result cost
milliseconds even where nothing matches, and most patterns spell out words that any match must contain
(`registry`, `configured`, `def test_`), which `str.__contains__` rules in or out at memory speed.
`needles(pattern, flags)` reads the pattern and returns such a set (lower case, ASCII), or None where it
can't vouch for one: a construct it doesn't model, or a branch that needs no literal. It reads only what
it models and gives up on the rest, so a set it returns is always a necessary condition: a text that
holds none of them (`absent`, on `folded` text) can't match, and the pattern need not run.
"""

from __future__ import annotations

import re

import regex

MIN_NEEDLE = 3
"""Shorter literals are in almost every text: checking them would cost more than it saves."""
QUANTIFIER = re.compile(r"[*+?]|\{(\d*)(?:(,)(\d*))?\}")
SIMPLE_ESCAPES = frozenset("dDwWsSbBAZz")  # a class or an assertion: no literal, nothing to consume
CODE_WIDTHS = {"x": 2, "u": 4, "U": 8}  # \x41, \u00e9, \U0001f600
HEX = frozenset("0123456789abcdefABCDEF")
BACKREFERENCE = re.compile(r"\\[1-9g]|\(\?P=|\(\?\(")  # a branch that refers to another's group
GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux-]*\)")  # `(?i)` in one branch applies to all
FLAGS = re.compile(r"\?[aiLmsu-]*(?=[:)])")  # `(?i)`, `(?m:`, `(?-i:`; not x (verbose), f (full case), V1
# Simple case folding (what `regex` does without FULLCASE) takes these to ASCII letters where
# `str.lower` doesn't (it does take the Kelvin sign to `k`).
FOLDS = {"\u0130": "i", "\u017f": "s"}


class Unsupported(Exception):
    """A construct this reader doesn't model: the pattern gets no needles."""


def needles(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Lower-case ASCII literals, one of which every match of `pattern` contains; None if unknown."""
    if flags & (regex.VERBOSE | regex.FULLCASE | regex.VERSION1):
        return None
    try:
        found, end = _alternation(pattern, 0)
    except (Unsupported, IndexError):
        return None
    if end != len(pattern) or found is None or min(map(len, found)) < MIN_NEEDLE:
        return None
    return found


def branches(pattern: str, flags: int = 0) -> list[str] | None:
    """The top-level alternatives of `pattern`, each a pattern of its own, when there are several and
    splitting can't change what matches (no back-reference or global flag ties one to another): some
    alternative matches a text exactly when the whole does. None otherwise."""
    if (
        flags & (regex.VERBOSE | regex.VERSION1)
        or BACKREFERENCE.search(pattern)
        or GLOBAL_FLAGS.search(pattern)
    ):
        return None
    spans: list[int] = []
    try:
        _, end = _alternation(pattern, 0, spans)
    except (Unsupported, IndexError):
        return None
    if end != len(pattern) or not spans:
        return None
    cuts = [-1, *spans, len(pattern)]
    return [pattern[a + 1 : b] for a, b in zip(cuts, cuts[1:], strict=False)]


def folded(text: str) -> str:
    """`text` lower-cased as the matcher folds case, so a lower-case needle is in it wherever a match is."""
    if text.isascii():
        return text.lower()
    for char, ascii_char in FOLDS.items():
        text = text.replace(char, ascii_char)
    return text.lower()


def absent(found: frozenset[str], folded_text: str) -> bool:
    return not any(n in folded_text for n in found)


def _alternation(p: str, i: int, bars: list[int] | None = None) -> tuple[frozenset[str] | None, int]:
    """Branches up to a `)` or the end: every match holds a literal of its branch's set. The places
    of the `|` between them go to `bars`."""
    union: set[str] = set()
    known = True
    while True:
        found, i = _sequence(p, i)
        if found is None:
            known = False
        else:
            union |= found
        if i < len(p) and p[i] == "|":
            if bars is not None:
                bars.append(i)
            i += 1
            continue
        return (frozenset(union) if known else None), i


def _sequence(p: str, i: int) -> tuple[frozenset[str] | None, int]:
    """One branch: the best of the sets its parts require (literal runs, required groups)."""
    sets: list[frozenset[str]] = []
    run = ""

    def close() -> None:
        nonlocal run
        if run:
            sets.append(frozenset({run}))
        run = ""

    while i < len(p) and p[i] not in "|)":
        char, literal, found, i = _atom(p, i)
        low, high, i = _quantifier(p, i)
        if literal and low >= 1 and char.isascii():
            run += char.lower()
            if high != 1:
                close()
            continue
        close()
        if found is not None and low >= 1:
            sets.append(found)
    close()
    sets = [s for s in sets if s]
    if not sets:
        return None, i
    return max(sets, key=_rarity), i


def _rarity(found: frozenset[str]) -> tuple[int, int]:
    """How seldom text holds one of `found`: by its weakest literal's length, where punctuation counts
    extra (`,off` is rarer than `http`), then by fewer literals."""
    return min(len(n) + 2 * (not n.isalnum()) for n in found), -len(found)


def _atom(p: str, i: int) -> tuple[str, bool, frozenset[str] | None, int]:
    """(char, is a literal char, set a group requires, next index) of the atom at `i`."""
    char = p[i]
    if char == "\\":
        return _escape(p, i)
    if char == "[":
        return "", False, None, _class_end(p, i)
    if char == "(":
        return _group(p, i)
    if char in "*+?{" and QUANTIFIER.match(p, i):
        raise Unsupported("quantifier without an atom")
    if char in ".^$":
        return "", False, None, i + 1
    return char, True, None, i + 1


def _escape(p: str, i: int) -> tuple[str, bool, None, int]:
    """An escape: a literal punctuation char, or an atom that requires no literal (a class, an assertion,
    a control or coded char, a back-reference) skipped whole; other letters are not modelled."""
    nxt = p[i + 1]
    if not nxt.isalnum() and nxt.isascii():
        return nxt, True, None, i + 2
    if nxt in SIMPLE_ESCAPES or nxt in "ntrfva":
        return "", False, None, i + 2
    if nxt.isdigit():  # a back-reference or an octal code
        j = i + 1
        while j < len(p) and p[j].isdigit():
            j += 1
        return "", False, None, j
    width = CODE_WIDTHS.get(nxt)
    if width is not None and all(c in HEX for c in p[i + 2 : i + 2 + width]):
        return "", False, None, i + 2 + width
    raise Unsupported("\\" + nxt)  # \p{…}, \N{…}, \g<…>, \G, \m


def _class_end(p: str, i: int) -> int:
    j = i + 1
    if p[j] == "^":
        j += 1
    if p[j] == "]":
        j += 1
    while p[j] != "]":
        if p[j] == "[" and p[j + 1] in ":=.":
            raise Unsupported("POSIX class")
        j += 2 if p[j] == "\\" else 1
    return j + 1


def _group(p: str, i: int) -> tuple[str, bool, frozenset[str] | None, int]:
    """A group: its alternation's set; none for a lookaround (it consumes nothing) or a comment."""
    body = i + 1
    zero_width = False
    if p[body] == "?":
        if p.startswith("?#", body):
            return "", False, None, p.index(")", body) + 1
        if p.startswith(("?:", "?>"), body):
            body += 2
        elif p.startswith(("?=", "?!"), body):
            zero_width, body = True, body + 2
        elif p.startswith(("?<=", "?<!"), body):
            zero_width, body = True, body + 3
        elif p.startswith(("?P<", "?<"), body):  # a named group
            body = p.index(">", body) + 1
        else:
            flags = FLAGS.match(p, body)
            if flags is None:
                raise Unsupported(p[body : body + 3])  # (?(…), (?|…), (?P=…), (?R), (?&…), (?x)
            body = flags.end() + 1
            if p[flags.end()] == ")":  # `(?i)`: sets flags, matches nothing
                return "", False, None, body
    found, end = _alternation(p, body)
    if p[end] != ")":
        raise Unsupported("unbalanced group")
    return "", False, (None if zero_width else found), end + 1


def _quantifier(p: str, i: int) -> tuple[int, int | None, int]:
    """(least, most (None: unbounded), next index) of the repeat at `i`; (1, 1, i) when none."""
    m = QUANTIFIER.match(p, i)
    if not m:
        return 1, 1, i
    q = m[0]
    if q == "*":
        low, high = 0, None
    elif q == "+":
        low, high = 1, None
    elif q == "?":
        low, high = 0, 1
    else:
        low = int(m[1] or 0)
        high = int(m[3]) if m[2] and m[3] else (None if m[2] else low)
    end = m.end()
    if end < len(p) and p[end] in "?+":  # lazy or possessive: the same counts
        end += 1
    return low, high, end
