def median(values: list[float]) -> float:
    """Middle value (mean of the two middle ones for an even count); empty input raises ValueError."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
