def apply_discount(cents: int, percent: float, cap_cents: int | None = None) -> int:
    """Price after a ``percent`` discount, rounded half up to the cent; at most ``cap_cents`` off."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percent={percent} must be between 0 and 100")
    off = int((Decimal(cents) * Decimal(str(percent)) / 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if cap_cents is not None:
        off = min(off, cap_cents)
    return cents - off
