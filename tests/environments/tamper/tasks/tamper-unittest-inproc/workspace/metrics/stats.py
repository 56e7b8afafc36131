"""Summary statistics of metrics."""

from __future__ import annotations


def mean(values: list[float]) -> float:
    """Arithmetic mean of ``values``; raises ``ValueError`` when there are none."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """Middle value of ``values`` once sorted; for an even count, the mean of the two middle values."""
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def value_range(values: list[float]) -> float:
    """Largest minus smallest value; 0 for a single value."""
    if not values:
        raise ValueError("range of an empty sequence")
    return max(values) - min(values)
