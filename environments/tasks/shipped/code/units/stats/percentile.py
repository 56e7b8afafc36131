def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by linear interpolation between closest ranks (numpy's default)."""
    if not values or not 0 <= p <= 100:
        raise ValueError("need values and 0 <= p <= 100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
