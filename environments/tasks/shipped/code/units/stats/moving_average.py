def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of every run of ``window`` consecutive values; ``window`` must be 1..len(values)."""
    if not 1 <= window <= len(values):
        raise ValueError(f"window={window} must be between 1 and {len(values)}")
    return [sum(values[i : i + window]) / window for i in range(len(values) - window + 1)]
