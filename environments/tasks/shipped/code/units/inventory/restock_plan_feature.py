def restock_plan(levels: dict[str, int], minimum: dict[str, int], pack: int = 1,
                 max_order: int | None = None) -> dict[str, int]:
    """Units to order per SKU to bring each level up to its minimum, rounded up to whole packs."""
    plan = {}
    for sku, floor in minimum.items():
        short = floor - levels.get(sku, 0)
        if short > 0:
            units = -(-short // pack) * pack
            if max_order is not None:
                units = min(units, max_order // pack * pack)
            if units > 0:
                plan[sku] = units
    return plan
