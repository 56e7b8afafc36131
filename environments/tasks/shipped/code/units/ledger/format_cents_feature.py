def format_cents(cents: int, symbol: str = "$", accounting: bool = False) -> str:
    """``-123450`` -> ``"-$1,234.50"``, or ``"($1,234.50)"`` in accounting style."""
    whole, frac = divmod(abs(cents), 100)
    body = f"{symbol}{whole:,}.{frac:02d}"
    if cents < 0:
        return f"({body})" if accounting else f"-{body}"
    return body
