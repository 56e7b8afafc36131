"""Rates helpers of shipping."""

from __future__ import annotations

import math

BASE_CENTS = {"domestic": 500, "eu": 900, "world": 1500}
PER_KG_CENTS = {"domestic": 95, "eu": 250, "world": 400}
NO_EXPRESS = frozenset({"world"})


def shipping_cost(weight_kg: float, zone: str, express: bool = False) -> int:
    """Price in cents: the zone's base rate plus its per-kg rate for every started kilogram.

    ``express`` costs half as much again, rounded up to a whole cent; it is not offered for ``world``.
    """
    if weight_kg <= 0:
        raise ValueError(f"weight_kg={weight_kg!r} must be positive")
    if zone not in BASE_CENTS:
        raise ValueError(f"unknown zone {zone!r}; use one of {sorted(BASE_CENTS)}")
    cents = BASE_CENTS[zone] + PER_KG_CENTS[zone] * math.ceil(weight_kg)
    if not express:
        return cents
    if zone in NO_EXPRESS:
        raise ValueError(f"express shipping is not offered for zone {zone!r}")
    return (cents * 3 + 1) // 2
