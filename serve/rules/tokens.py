"""Runs of text between the characters a pattern can't look at, cut at memory speed.

Some fold patterns match only within runs of certain characters, and their lookarounds look at no other
character (a host name: letters, digits and `.@-`; see `serve.rules.facts`). Cut at every other character,
a text's runs hold the same matches; so such a pattern may scan only the runs that can hold one (those
with a `.`, say), joined by a space, itself a cut character: a fraction of a long tool result, same
matches. `str.translate` and `str.split` cut ASCII text; other text goes through one stdlib character
class, which cuts the same (its `\\s` is what `str.split` splits at).
"""

from __future__ import annotations

import re
import string


class Cutter:
    """Cuts text at the ASCII characters in `cut` and at whitespace."""

    def __init__(self, cut: str) -> None:
        self.table = str.maketrans(dict.fromkeys(cut, " "))
        self.run = re.compile(f"[^{re.escape(cut)}\\s]+")

    def runs(self, text: str) -> list[str]:
        return text.translate(self.table).split() if text.isascii() else self.run.findall(text)

    def runs_with(self, text: str, char: str) -> str:
        """The runs holding `char`, joined by spaces."""
        return " ".join(r for r in self.runs(text) if char in r)


def all_but(keep: str) -> Cutter:
    """A cutter at every ASCII character but `keep`, letters and digits."""
    kept = set(keep + string.ascii_letters + string.digits)
    return Cutter("".join(c for c in map(chr, range(128)) if c not in kept))
