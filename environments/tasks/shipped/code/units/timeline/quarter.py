def quarter(day: date) -> str:
    """Calendar quarter label, e.g. ``"2024-Q1"``."""
    return f"{day.year}-Q{(day.month - 1) // 3 + 1}"
