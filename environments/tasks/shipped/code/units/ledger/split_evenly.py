def split_evenly(total_cents: int, parts: int) -> list[int]:
    """Split an amount into ``parts`` shares that differ by at most a cent, larger shares first."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    base, extra = divmod(total_cents, parts)
    return [base + 1 if i < extra else base for i in range(parts)]
