"""Small text helpers."""

import re


def words(text: str) -> list[str]:
    """The runs of letters and digits in ``text``, in order."""
    return re.findall(r"[A-Za-z0-9]+", text)
