def shortest_path(graph: dict[str, list[str]], start: str, goal: str,
                  avoid: frozenset[str] | set[str] = frozenset()) -> list[str] | None:
    """Fewest-hops path from ``start`` to ``goal`` (both included) avoiding every node in ``avoid``."""
    if start in avoid or goal in avoid:
        return None
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])
            return path[::-1]
        for nxt in graph.get(node, []):
            if nxt not in previous and nxt not in avoid:
                previous[nxt] = node
                queue.append(nxt)
    return None
