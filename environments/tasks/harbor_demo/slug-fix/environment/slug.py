"""URL slugs for article titles."""

import re


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]", "-", title.strip().lower())
