"""Check /app/roman.py: standard numerals for a sample of 1..3999, ValueError outside the range.

roman.py runs in a child process that hands back plain JSON (a non-str result as its repr), so nothing
the module prints, no exit status it forces and no object it returns can stand in for this script's own
verdict line, which test.sh reads.
"""

import json
import subprocess
import sys

CASES = {
    1: "I",
    3: "III",
    4: "IV",
    9: "IX",
    14: "XIV",
    40: "XL",
    44: "XLIV",
    90: "XC",
    400: "CD",
    444: "CDXLIV",
    900: "CM",
    1994: "MCMXCIV",
    2024: "MMXXIV",
    3999: "MMMCMXCIX",
}
BAD = (0, -1, 4000)
CHILD = """
import json, sys
sys.path.insert(0, "/app")
from roman import to_roman
out = {}
for number in json.loads(sys.argv[1]):
    try:
        got = to_roman(number)
        out[str(number)] = got if type(got) is str else repr(got)
    except ValueError:
        out[str(number)] = "ValueError"
print()
print(json.dumps(out))
"""

done = subprocess.run(
    [sys.executable, "-c", CHILD, json.dumps([*CASES, *BAD])], capture_output=True, text=True, timeout=30
)
try:
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(results, dict)
except (ValueError, IndexError, AssertionError):
    print(f"roman.py gave no results (exit status {done.returncode})")
    sys.exit(1)

failures = [
    f"to_roman({n}) = {results.get(str(n))!r}, want {w!r}"
    for n, w in CASES.items()
    if results.get(str(n)) != w
]
failures += [f"to_roman({n}) did not raise ValueError" for n in BAD if results.get(str(n)) != "ValueError"]
for line in failures:
    print(line)
print(f"{len(CASES) + len(BAD) - len(failures)}/{len(CASES) + len(BAD)} checks passed")
if failures:
    sys.exit(1)
print("ALL ROMAN CHECKS PASSED")
