#!/bin/bash
# Reference solution: rewrite to_roman with the subtractive pairs in the table.
cat > /app/roman.py <<'PY'
"""Roman numerals for the typesetting tool's front matter."""

NUMERALS = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def to_roman(number: int) -> str:
    """``number`` (1 to 3999) as a Roman numeral."""
    if not isinstance(number, int) or not 1 <= number <= 3999:
        raise ValueError(f"{number!r} cannot be written as a Roman numeral")
    out = []
    for value, letters in NUMERALS:
        count, number = divmod(number, value)
        out.append(letters * count)
    return "".join(out)
PY
