import sys

sys.path.insert(0, "/app")

import textkit  # noqa: E402
from slug import slugify  # noqa: E402


def test_words_are_joined_by_single_hyphens():
    assert slugify("  Hello,  World! ") == "hello-world"
    assert slugify("Ray Serve -- a guard") == "ray-serve-a-guard"


def test_digits_stay_and_empty_titles_give_empty_slugs():
    assert slugify("Top 10 Tips") == "top-10-tips"
    assert slugify("!!!") == ""


def test_the_installed_helper_is_used():
    calls = []
    original = textkit.words
    textkit.words = lambda text: calls.append(text) or original(text)
    try:
        assert slugify("A b") == "a-b"
    finally:
        textkit.words = original
    assert calls == ["A b"]
