#!/bin/bash
cat > /app/slug.py <<'PY'
"""URL slugs for article titles."""

import textkit


def slugify(title: str) -> str:
    return "-".join(word.lower() for word in textkit.words(title))
PY
