def deep_merge(base: dict, override: dict, concat_lists: bool = False) -> dict:
    """A new dict: ``override`` wins, nested dicts are merged key by key; neither input is modified."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value, concat_lists)
        elif concat_lists and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = merged[key] + value
        else:
            merged[key] = value
    return merged
