"""Write ``docs/benchmarks.md`` from every file in ``benchmarks/data/``: that page is generated, never edited.

    python -m benchmarks.report            # rewrite docs/benchmarks.md
    python -m benchmarks.report --check    # exit 1, with one line, when docs/benchmarks.md is out of date

Per ``.json`` file: a heading, the command that made it (its ``command`` key), its machine and date where
present, the top-level scalar figures in one table, then each nested value under a heading of its own: a
mapping of scalars as a two-column table; a mapping or list of records whose fields are mostly scalars as
one table, a row per record; anything else as a table of its leaves by path. A list of scalars is written
out when short and summarized when long (count, then min, median and max for numbers). Per ``.jsonl``
file: how many records and their keys.

Data files differ in shape, so nothing here assumes a key beyond ``command``, ``machine`` and ``date``; a
file that is not valid JSON is named on the page with the parser's message instead of stopping the report.
Pure standard library: no benchmark runs, nothing is imported from the project.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
PAGE = ROOT / "docs" / "benchmarks.md"
META = ("command", "machine", "date")
"""Top-level string keys shown above a file's figures instead of among them."""
INLINE_ITEMS = 8
"""A list of scalars up to this long is written out whole; a longer one is summarized."""
MAX_COLUMNS = 12
"""A collection of records becomes one table only up to this many columns."""
HEADER = """\
# Benchmark figures

Generated from `benchmarks/data/` by `python -m benchmarks.report`; edit the data files, not this page
(`python -m benchmarks.report --check` says whether it is up to date). Each section is one data file: the
command that made it, the machine and date where the file records them, and its figures. What each
benchmark measures and why: the topic pages beside this one ([training](training.md),
[guard](guard.md), [integrity](integrity.md), [cluster](cluster.md), [models](models.md),
[learning check](learning-check.md)).
"""


def is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def is_cell(value: object) -> bool:
    """A value one table cell shows whole: a scalar or a list of scalars."""
    return is_scalar(value) or (isinstance(value, list) and all(is_scalar(v) for v in value))


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def fmt(value: Any) -> str:
    """One value as table text; a nested value is summarized by its size."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, list):
        if all(is_scalar(v) for v in value):
            return fmt_list(value)
        return f"{len(value)} entries"
    if isinstance(value, dict):
        return f"{len(value)} keys" if value else "none"
    return str(value)


def fmt_list(values: list[Any]) -> str:
    if not values:
        return "none"
    if len(values) <= INLINE_ITEMS:
        return ", ".join(fmt(v) for v in values)
    if all(is_number(v) for v in values):
        low, middle, high = min(values), statistics.median(values), max(values)
        return f"{len(values)} values: min {fmt(low)}, median {fmt(middle)}, max {fmt(high)}"
    return f"{len(values)} entries: {', '.join(fmt(v) for v in values[:3])}, …"


def cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def label(key: str) -> str:
    """A key as the first column shows it (code spans keep paths and underscores literal)."""
    return f"`{key}`" if "`" not in key else cell(key)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def records(value: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """``value`` as (name, record) pairs when it is a mapping or list of records one table can show:
    every element a non-empty mapping, few enough columns, and most fields cells. None otherwise."""
    if isinstance(value, dict):
        pairs = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        pairs = [(str(i), v) for i, v in enumerate(value)]
    else:
        return None
    if not pairs or not all(isinstance(v, dict) and v for _, v in pairs):
        return None
    columns = {key for _, record in pairs for key in record}
    fields = [v for _, record in pairs for v in record.values()]
    if len(columns) > MAX_COLUMNS or 2 * sum(map(is_cell, fields)) <= len(fields):
        return None
    return pairs


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every cell under ``value`` with its path (``a › b[0] › c``); an empty container is a leaf."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaves(child, f"{path} › {key}" if path else str(key))
    elif isinstance(value, list) and value and not is_cell(value):
        for index, child in enumerate(value):
            yield from leaves(child, f"{path}[{index}]")
    else:
        yield path, value


def render_value(value: Any) -> list[str]:
    """The lines of one nested value: a two-column table, a table of records or a table of leaves."""
    if isinstance(value, dict) and value and all(is_cell(v) for v in value.values()):
        return table(("figure", "value"), [(label(str(k)), fmt(v)) for k, v in value.items()])
    pairs = records(value)
    if pairs is not None:
        columns = list(dict.fromkeys(key for _, record in pairs for key in record))
        rows = [
            [label(name)] + [fmt(record[c]) if c in record else "" for c in columns] for name, record in pairs
        ]
        return table(["", *columns], rows)
    if is_cell(value) or value in ({}, []):
        return [fmt(value)]
    return table(("figure", "value"), [(label(path), fmt(v)) for path, v in leaves(value)])


def render_json(data: Any) -> list[str]:
    """The body of one JSON file's section (below its heading and link)."""
    if not isinstance(data, dict):
        return render_value(data)
    lines: list[str] = []
    meta = [(k, data[k]) for k in META if isinstance(data.get(k), str)]
    lines += [f"- {key}: `{text}`" if key == "command" else f"- {key}: {text}" for key, text in meta]
    shown = {k for k, _ in meta}
    flat = [(k, v) for k, v in data.items() if k not in shown and is_cell(v)]
    nested = [(k, v) for k, v in data.items() if k not in shown and not is_cell(v)]
    if flat:
        lines += [""] if lines else []
        lines += table(("figure", "value"), [(label(k), fmt(v)) for k, v in flat])
    for key, value in nested:
        lines += ["", f"### {key}", ""] if lines else [f"### {key}", ""]
        lines += render_value(value)
    return lines


def render_jsonl(text: str) -> list[str]:
    count, problems = 0, []
    keys: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"- line {number} is not JSON: {exc.msg}")
            continue
        count += 1
        if isinstance(record, dict):
            keys.update(dict.fromkeys(record))
    lines = [f"{count} records" + (", with the keys:" if keys else ".")]
    if keys:
        lines += ["", ", ".join(f"`{k}`" for k in keys)]
    if problems:
        lines += ["", *problems]
    return lines


def render_file(path: Path) -> list[str]:
    """One data file's section: heading, link to the file, then its body."""
    lines = [f"## {path.name}", "", f"[`benchmarks/data/{path.name}`](../benchmarks/data/{path.name})", ""]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return lines + render_jsonl(text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return lines + [f"Not valid JSON: {exc.msg} (line {exc.lineno})."]
    return lines + render_json(data)


def data_files(data: Path) -> list[Path]:
    return sorted(p for p in data.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl"))


def render(data: Path = DATA) -> str:
    """The whole page for the data files in ``data``."""
    sections = [HEADER.rstrip("\n")]
    sections += ["\n".join(render_file(path)) for path in data_files(data)]
    return "\n\n".join(sections) + "\n"


def main(argv: Sequence[str] | None = None, *, data: Path = DATA, page: Path = PAGE) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the page is out of date; write nothing"
    )
    args = parser.parse_args(argv)
    text = render(data)
    shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    if args.check:
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            print(f"{shown} is out of date: run python -m benchmarks.report", file=sys.stderr)
            return 1
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {shown} from {len(data_files(data))} data files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
