def topo_order(deps: dict[str, list[str]], levels: bool = False) -> list:
    """Order items after their dependencies, alphabetically among ready ones; a cycle raises ValueError.

    With ``levels=True`` return batches: each is the sorted list of all items ready at the same time.
    """
    nodes = set(deps) | {d for ds in deps.values() for d in ds}
    waiting = {n: set(deps.get(n, [])) for n in nodes}
    order: list = []
    while waiting:
        ready = sorted(n for n, ds in waiting.items() if not ds)
        if not ready:
            raise ValueError(f"dependency cycle among {sorted(waiting)}")
        batch = ready if levels else ready[:1]
        order.append(batch) if levels else order.extend(batch)
        for done in batch:
            del waiting[done]
        for ds in waiting.values():
            ds.difference_update(batch)
    return order
