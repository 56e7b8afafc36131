def topo_order(deps: dict[str, list[str]]) -> list[str]:
    """Order items after their dependencies, alphabetically among ready ones; a cycle raises ValueError."""
    nodes = set(deps) | {d for ds in deps.values() for d in ds}
    waiting = {n: set(deps.get(n, [])) for n in nodes}
    order: list[str] = []
    while waiting:
        ready = sorted(n for n, ds in waiting.items() if not ds)
        if not ready:
            raise ValueError(f"dependency cycle among {sorted(waiting)}")
        order.append(ready[0])
        del waiting[ready[0]]
        for ds in waiting.values():
            ds.discard(ready[0])
    return order
