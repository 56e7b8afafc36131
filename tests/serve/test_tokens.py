"""Scanning only the runs that can hold a match (`serve.rules.tokens`) finds what scanning the whole text
finds: the hosts and path tokens of the dev cases' texts and of random text with the characters that
matter (cut and kept ones, case folds to ASCII, non-ASCII digits and spaces)."""

from __future__ import annotations

import random
from pathlib import Path

from serve.rules import facts

DATA = Path(__file__).parent / "data"
PIECES = [
    *"abcXYZ019.-_@/:[]() \n\t'\"`,;=|&",
    *"\u0130\u017f\u212a\u00e9\u00a0\u2028\x1c\u0663\uff42",
    "localhost",
    "redis:6379",
    "Db-1:54321",
    "x" * 62 + ":80",
    "y" * 63 + ":80",
    "a:1",
    ":443",
    "10.0.0.1",
    "http://",
    "a.b.example.com",
    "::1",
    ".py",
]


def whole_text_hosts(text: str) -> set[str]:
    found = {m[1].lower() for m in facts.HOSTNAME.finditer(text)}
    found |= {m[1].lower() for m in facts.SCP_REMOTE.finditer(text)}
    found |= {m[1].lower() for m in facts.TEXT_URL.finditer(text)}
    found |= {m[1] for m in facts.IPV4.finditer(text)}
    found |= {m[1].lower() for m in facts.IPV6.finditer(text)}
    found |= {m[1].lower() for m in facts.HOST_PORT.finditer(text)}
    if "localhost" in text.lower():
        found.add("localhost")
    if facts.LOCAL_PORT.search(text):
        found |= {"localhost", "127.0.0.1"}
    return found


def split_path_tokens(text: str) -> list[str]:
    cut = str.maketrans({c: " " for c in "\t\n\r'\"`()[]{}<>,;:=|&*?!$#@%^+\\"})
    out = []
    for token in text.translate(cut).split():
        if ("/" in token or "." in token) and len(token) <= 4096:
            found = facts.PATH_TOKEN.match(token.strip("./") and token.rstrip("."))
            if found:
                out.append(found[0])
    return out


def texts() -> list[str]:
    out = [line for path in sorted(DATA.glob("guard_dev*.jsonl")) for line in path.read_text().splitlines()]
    rnd = random.Random(7)
    out += ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 60))) for _ in range(2000)]
    return out


def test_runs_find_what_the_whole_text_holds():
    for text in texts():
        assert facts.text_hosts(text) == whole_text_hosts(text), text[:200]
        assert facts.path_tokens(text) == split_path_tokens(text), text[:200]
        assert facts.path_token_set(text) == set(split_path_tokens(text)), text[:200]
