import subprocess
from pathlib import Path


def top(path: Path, n: int) -> list[str]:
    done = subprocess.run(
        ["python3", "/app/top_words.py", str(path), str(n)], capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_counts_skip_stop_words_and_ties_are_alphabetical(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("The Fox and the fox. A bird, a BIRD, a bird! Owls? owls.\n")
    assert top(text, 3) == ["bird 3", "fox 2", "owls 2"]


def test_n_limits_the_lines_and_the_sample_works():
    assert top(Path("/data/corpus.txt"), 2) == ["cat 3", "dog 2"]
