def components(edges: list[tuple[str, str]], nodes: tuple[str, ...] | list[str] = ()) -> list[list[str]]:
    """Connected components of an undirected graph, each sorted, ordered by their first member.

    ``nodes`` adds vertices that may have no edges; each isolated one is a component of its own.
    """
    adjacent: dict[str, set[str]] = {n: set() for n in nodes}
    for a, b in edges:
        adjacent.setdefault(a, set()).add(b)
        adjacent.setdefault(b, set()).add(a)
    seen: set[str] = set()
    groups = []
    for node in sorted(adjacent):
        if node in seen:
            continue
        stack, group = [node], set()
        while stack:
            cur = stack.pop()
            if cur not in group:
                group.add(cur)
                stack.extend(adjacent[cur] - group)
        seen |= group
        groups.append(sorted(group))
    return groups
