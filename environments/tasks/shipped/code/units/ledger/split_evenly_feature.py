def split_evenly(total_cents: int, parts: int, weights: list[int] | None = None) -> list[int]:
    """Split an amount into ``parts`` shares that differ by at most a cent, larger shares first.

    With ``weights``, shares are proportional; leftover cents go to the largest remainders (ties: first).
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    if weights is None:
        base, extra = divmod(total_cents, parts)
        return [base + 1 if i < extra else base for i in range(parts)]
    if len(weights) != parts or sum(weights) <= 0:
        raise ValueError("weights need one positive entry per part")
    raw = [total_cents * w / sum(weights) for w in weights]
    shares = [int(r) for r in raw]
    order = sorted(range(parts), key=lambda i: (-(raw[i] - shares[i]), i))
    for i in order[: total_cents - sum(shares)]:
        shares[i] += 1
    return shares
