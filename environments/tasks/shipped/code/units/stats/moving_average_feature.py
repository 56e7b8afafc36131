def moving_average(values: list[float], window: int, step: int = 1) -> list[float]:
    """Mean of every run of ``window`` consecutive values, starting every ``step`` values."""
    if not 1 <= window <= len(values):
        raise ValueError(f"window={window} must be between 1 and {len(values)}")
    if step < 1:
        raise ValueError("step must be at least 1")
    return [sum(values[i : i + window]) / window for i in range(0, len(values) - window + 1, step)]
