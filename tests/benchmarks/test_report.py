"""The generated benchmarks page: what a data file renders to, and that docs/benchmarks.md is up to date."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import report


def write(folder: Path, name: str, data: object) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_data_file_renders_its_command_machine_date_and_figures(tmp_path: Path):
    write(
        tmp_path,
        "bench.json",
        {
            "command": "python benchmarks/bench.py --fast",
            "machine": "2 CPU cores",
            "date": "2026-01-02",
            "speedup": 1.8034567,
            "ok": True,
            "spans": list(range(20)),
            "seeds": [1, 2, 3],
            "per_file": {"a.jsonl": {"attacks": 5, "blocked": 4}, "b.jsonl": {"attacks": 3, "blocked": 3}},
            "run": {"steps": 9, "collapses": [{"step": 2, "action": "rollback"}]},
        },
    )
    page = report.render(tmp_path)

    assert page.startswith("# Benchmark figures\n")
    assert "## bench.json" in page
    assert "[`benchmarks/data/bench.json`](../benchmarks/data/bench.json)" in page
    assert "- command: `python benchmarks/bench.py --fast`" in page
    assert "- machine: 2 CPU cores" in page
    assert "- date: 2026-01-02" in page
    assert "| `speedup` | 1.80346 |" in page  # six significant digits
    assert "| `ok` | true |" in page
    assert "| `seeds` | 1, 2, 3 |" in page
    assert "| `spans` | 20 values: min 0, median 9.5, max 19 |" in page
    # a mapping of records: one table, a row per record
    assert "### per_file\n\n|  | attacks | blocked |" in page
    assert "| `a.jsonl` | 5 | 4 |" in page
    # anything deeper: its leaves by path
    assert "| `collapses[0] › action` | rollback |" in page
    assert "| `command` |" not in page  # the command is shown above the figures, not among them


def test_jsonl_files_report_their_records_and_keys_and_bad_json_is_named(tmp_path: Path):
    write(
        tmp_path, "runs.jsonl", '{"device": "H200", "peak_gib": 22.6}\n\n{"device": "H200", "step_s": 7.8}\n'
    )
    write(tmp_path, "broken.json", "{not json")
    (tmp_path / "notes.txt").write_text("ignored")
    page = report.render(tmp_path)

    assert "2 records, with the keys:\n\n`device`, `peak_gib`, `step_s`" in page
    assert "## broken.json" in page and "Not valid JSON" in page
    assert "notes.txt" not in page
    assert page.index("## broken.json") < page.index("## runs.jsonl")  # files in name order


def test_check_says_in_one_line_when_the_page_is_out_of_date(tmp_path: Path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    write(data, "bench.json", {"speedup": 2})
    page = tmp_path / "benchmarks.md"

    assert report.main(["--check"], data=data, page=page) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert report.main([], data=data, page=page) == 0
    assert report.main(["--check"], data=data, page=page) == 0
    assert page.read_text() == report.render(data)


def test_docs_benchmarks_md_is_generated_from_the_data_files_as_they_are():
    assert report.PAGE.read_text(encoding="utf-8") == report.render(report.DATA), (
        "docs/benchmarks.md is out of date: run python -m benchmarks.report"
    )
