"""Check /app/roman.py: standard numerals for a sample of 1..3999, ValueError outside the range."""

import sys

sys.path.insert(0, "/app")

from roman import to_roman  # noqa: E402

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

failures = []
for number, want in CASES.items():
    got = to_roman(number)
    if type(got) is not str or got != want:
        failures.append(f"to_roman({number}) = {got!r}, want {want!r}")
for bad in (0, -1, 4000):
    try:
        to_roman(bad)
    except ValueError:
        continue
    failures.append(f"to_roman({bad}) did not raise ValueError")

for line in failures:
    print(line)
print(f"{len(CASES) + 3 - len(failures)}/{len(CASES) + 3} checks passed")
if failures:
    sys.exit(1)
print("ALL ROMAN CHECKS PASSED")
