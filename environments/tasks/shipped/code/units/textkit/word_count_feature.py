def word_count(text: str, stopwords: tuple[str, ...] | list[str] | set[str] = ()) -> dict[str, int]:
    """How often each word occurs, case-insensitively; apostrophes stay inside words."""
    skip = {w.lower() for w in stopwords}
    counts: dict[str, int] = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        word = word.strip("'")
        if word and word not in skip:
            counts[word] = counts.get(word, 0) + 1
    return counts
