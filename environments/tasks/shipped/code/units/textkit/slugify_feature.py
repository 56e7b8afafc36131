def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    """Lower-case ``text`` and join its runs of letters and digits with ``sep``."""
    slug = re.sub(r"[^a-z0-9]+", sep, text.lower()).strip(sep)
    if max_length is None or len(slug) <= max_length:
        return slug
    cut = slug[: max_length + 1]
    if sep in cut:
        return cut[: cut.rindex(sep)].strip(sep)
    return slug[:max_length]
