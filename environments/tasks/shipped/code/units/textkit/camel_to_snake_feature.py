def camel_to_snake(name: str, sep: str = "_") -> str:
    """``HTTPServerError`` -> ``http_server_error``; acronyms stay one word."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower().replace("_", sep)
