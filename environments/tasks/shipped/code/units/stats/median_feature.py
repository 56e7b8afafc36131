def median(values: list[float | None], skip_none: bool = False) -> float:
    """Middle value (mean of the two middle ones for an even count); empty input raises ValueError."""
    if skip_none:
        values = [v for v in values if v is not None]
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
