def humanize_age(seconds: int) -> str:
    """``"just now"`` within 5 s, else ``"<n> <unit>(s) ago"``, or ``"in <n> <unit>(s)"`` when negative."""
    if abs(seconds) < 5:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if abs(seconds) >= size:
            count = abs(seconds) // size
            label = f"{count} {unit}{'' if count == 1 else 's'}"
            return f"in {label}" if seconds < 0 else f"{label} ago"
    raise AssertionError("unreachable")
