def add_months(day: date, months: int) -> date:
    """Shift by whole months, clamping to the target month's last day (Jan 31 + 1 -> Feb 28/29)."""
    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
