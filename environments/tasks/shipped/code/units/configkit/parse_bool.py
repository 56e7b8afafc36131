TRUE_WORDS = {"1", "true", "yes", "on", "y"}
FALSE_WORDS = {"0", "false", "no", "off", "n", ""}


def parse_bool(text: str) -> bool:
    """Read a config flag: yes/no, true/false, on/off, 1/0, y/n in any case; other text raises ValueError."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"not a boolean: {text!r}")
