def business_days(start: date, end: date, holidays: tuple[date, ...] | list[date] | set[date] = ()) -> int:
    """Weekdays (Mon-Fri) in the half-open range [start, end), minus ``holidays``."""
    if end < start:
        raise ValueError("end is before start")
    skip = set(holidays)
    days = (start + timedelta(days=i) for i in range((end - start).days))
    return sum(1 for day in days if day.weekday() < 5 and day not in skip)
