def truncate(text: str, width: int, suffix: str = "...", whole_words: bool = False) -> str:
    """Shorten ``text`` to at most ``width`` characters, ending with ``suffix`` when cut."""
    if width < len(suffix):
        raise ValueError(f"width={width} is shorter than the suffix {suffix!r}")
    if len(text) <= width:
        return text
    head = text[: width - len(suffix)]
    if whole_words and " " in head and text[len(head)] != " ":
        head = head[: head.rindex(" ")]
    return head.rstrip() + suffix
