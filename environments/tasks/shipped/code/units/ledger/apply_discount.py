def apply_discount(cents: int, percent: float) -> int:
    """Price after a ``percent`` discount, rounded half up to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percent={percent} must be between 0 and 100")
    off = Decimal(cents) * Decimal(str(percent)) / 100
    return cents - int(off.quantize(Decimal(1), rounding=ROUND_HALF_UP))
