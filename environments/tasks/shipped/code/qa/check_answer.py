"""Accept answer.txt if it denotes the expected value (JSON or a Python literal, any spacing)."""
import ast
import json
import math
import sys
from pathlib import Path

EXPECTED = json.loads("__EXPECTED_JSON__")


def parse(text):
    text = text.strip().strip("`").strip()
    for reader in (json.loads, ast.literal_eval):
        try:
            return reader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return text


def same(got, want):
    if isinstance(want, bool) or want is None:
        return got is want or (isinstance(got, str) and got.lower() == str(want).lower())
    if isinstance(want, (int, float)):
        number = isinstance(got, (int, float)) and not isinstance(got, bool)
        return number and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(want, str):
        return isinstance(got, str) and got.strip() == want.strip()
    if isinstance(want, list):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(map(same, got, want))
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(map(str, got)) != set(want):
            return False
        return all(same(got[k], want[str(k)]) for k in got)
    return False


answer = Path("answer.txt")
if not answer.is_file():
    sys.exit("no answer.txt")
text = answer.read_text(encoding="utf-8", errors="replace")
bare = text.strip().strip("`").strip("'\"").strip()
if not (same(parse(text), EXPECTED) or (isinstance(EXPECTED, str) and same(bare, EXPECTED))):
    sys.exit("answer.txt does not match")
