def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Greedy word wrap; a word longer than ``width`` gets a line of its own."""
    if width < 1 or len(indent) >= width:
        raise ValueError("width must be at least 1 and longer than the indent")
    room = width - len(indent)
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) <= room:
            line += " " + word
        else:
            if line:
                lines.append(indent + line)
            line = word
    if line:
        lines.append(indent + line)
    return lines
