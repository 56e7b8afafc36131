def truncate(text: str, width: int, suffix: str = "...") -> str:
    """Shorten ``text`` to at most ``width`` characters, ending with ``suffix`` when cut."""
    if width < len(suffix):
        raise ValueError(f"width={width} is shorter than the suffix {suffix!r}")
    if len(text) <= width:
        return text
    return text[: width - len(suffix)].rstrip() + suffix
