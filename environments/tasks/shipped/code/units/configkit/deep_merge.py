def deep_merge(base: dict, override: dict) -> dict:
    """A new dict: ``override`` wins, nested dicts are merged key by key; neither input is modified."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
