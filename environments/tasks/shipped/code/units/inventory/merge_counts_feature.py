def merge_counts(*counts: dict[str, int], allow_negative: bool = True) -> dict[str, int]:
    """Sum stock counts per SKU across locations, dropping SKUs that total zero. Inputs stay unmodified."""
    total: dict[str, int] = {}
    for part in counts:
        for sku, n in part.items():
            total[sku] = total.get(sku, 0) + n
    negative = sorted(sku for sku, n in total.items() if n < 0)
    if negative and not allow_negative:
        raise ValueError(f"negative totals for {negative}")
    return {sku: n for sku, n in total.items() if n != 0}
