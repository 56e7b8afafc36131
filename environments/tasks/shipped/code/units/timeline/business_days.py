def business_days(start: date, end: date) -> int:
    """Weekdays (Mon-Fri) in the half-open range [start, end)."""
    if end < start:
        raise ValueError("end is before start")
    return sum(1 for i in range((end - start).days) if (start + timedelta(days=i)).weekday() < 5)
