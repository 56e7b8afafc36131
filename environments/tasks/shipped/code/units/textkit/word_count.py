def word_count(text: str) -> dict[str, int]:
    """How often each word occurs, case-insensitively; apostrophes stay inside words."""
    counts: dict[str, int] = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        word = word.strip("'")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts
