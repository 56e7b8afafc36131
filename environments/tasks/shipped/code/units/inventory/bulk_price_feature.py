def bulk_price(unit_cents: int, qty: int, tiers: list[tuple[int, int]], coupon_cents: int = 0) -> int:
    """Total in cents for ``qty`` units with the best tier ``(min_qty, percent_off)`` that applies."""
    best = max((off for min_qty, off in tiers if qty >= min_qty), default=0)
    return max(0, unit_cents * qty * (100 - best) // 100 - coupon_cents)
