def quarter(day: date, fiscal_start: int = 1) -> str:
    """Quarter label, e.g. ``"2024-Q1"``; with ``fiscal_start`` the year is the fiscal year's start year."""
    if not 1 <= fiscal_start <= 12:
        raise ValueError("fiscal_start must be a month number 1-12")
    shifted = (day.month - fiscal_start) % 12
    year = day.year if day.month >= fiscal_start else day.year - 1
    return f"{year}-Q{shifted // 3 + 1}"
