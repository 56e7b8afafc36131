def restock_plan(levels: dict[str, int], minimum: dict[str, int], pack: int = 1) -> dict[str, int]:
    """Units to order per SKU to bring each level up to its minimum, rounded up to whole packs."""
    plan = {}
    for sku, floor in minimum.items():
        short = floor - levels.get(sku, 0)
        if short > 0:
            plan[sku] = -(-short // pack) * pack
    return plan
