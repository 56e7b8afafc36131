def shortest_path(graph: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """Fewest-hops path from ``start`` to ``goal`` (both included), or None; neighbours in listed order."""
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
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return None
