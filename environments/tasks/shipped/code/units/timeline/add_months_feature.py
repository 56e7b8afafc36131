def add_months(day: date, months: int, end_of_month: bool = False) -> date:
    """Shift by whole months, clamping to the target month's last day (Jan 31 + 1 -> Feb 28/29)."""
    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    month += 1
    last = calendar.monthrange(year, month)[1]
    if end_of_month and day.day == calendar.monthrange(day.year, day.month)[1]:
        return date(year, month, last)
    return date(year, month, min(day.day, last))
