def slugify(text: str, sep: str = "-") -> str:
    """Lower-case ``text`` and join its runs of letters and digits with ``sep``."""
    return re.sub(r"[^a-z0-9]+", sep, text.lower()).strip(sep)
