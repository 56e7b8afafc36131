def percentile(values: list[float], p: float, method: str = "linear") -> float:
    """The ``p``-th percentile (0-100): ``linear`` interpolates between ranks, ``nearest`` picks one."""
    if not values or not 0 <= p <= 100:
        raise ValueError("need values and 0 <= p <= 100")
    if method not in ("linear", "nearest"):
        raise ValueError(f"unknown method {method!r}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    if method == "nearest":
        return ordered[round(rank)]
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
