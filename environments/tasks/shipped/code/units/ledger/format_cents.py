def format_cents(cents: int, symbol: str = "$") -> str:
    """``-123450`` -> ``"-$1,234.50"``."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"
