def parse_cents(text: str) -> int:
    """``"$1,234.5"`` -> 123450; ``"(12.00)"`` (accounting) and ``"-3"`` are negative."""
    raw = text.strip().replace(",", "").replace("$", "").replace(" ", "")
    negative = raw.startswith("(") and raw.endswith(")") or raw.startswith("-")
    raw = raw.strip("()-")
    if not re.fullmatch(r"\d+(\.\d{1,2})?", raw):
        raise ValueError(f"not an amount: {text!r}")
    whole, _, frac = raw.partition(".")
    cents = int(whole) * 100 + int((frac + "00")[:2])
    return -cents if negative else cents
