def progressive_tax(income: float, brackets: list[tuple[float | None, float]],
                    deduction: float = 0.0) -> float:
    """Tax on ``income``: each bracket ``(upper_limit, rate)`` taxes the slice below its limit
    (``None`` = no limit); brackets are in increasing order. Rounded to cents."""
    income = max(0.0, income - deduction)
    tax, lower = 0.0, 0.0
    for upper, rate in brackets:
        top = income if upper is None else min(income, upper)
        if top > lower:
            tax += (top - lower) * rate
        if upper is None or income <= upper:
            break
        lower = upper
    return round(tax, 2)
