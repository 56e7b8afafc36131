def humanize_age(seconds: int) -> str:
    """``"just now"`` under 5 s, else ``"<n> <unit>(s) ago"`` in the largest whole unit up to days."""
    if seconds < 5:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    raise AssertionError("unreachable")
