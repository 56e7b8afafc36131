"""Small statistics shared by the benchmarks."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty list."""
    if not values:
        raise ValueError("percentile of no values: the benchmark collected no samples")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
