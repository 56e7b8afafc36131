def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    """Sum stock counts per SKU across locations, dropping SKUs that total zero. Inputs stay unmodified."""
    total: dict[str, int] = {}
    for part in counts:
        for sku, n in part.items():
            total[sku] = total.get(sku, 0) + n
    return {sku: n for sku, n in total.items() if n != 0}
