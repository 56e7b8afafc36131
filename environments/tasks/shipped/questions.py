"""Question templates for the data-analysis tasks. Each returns the question and the pandas code that
answers it (the reference solution runs that exact code), or None when the dataset does not suit it.

Templates draw their parameters (a category value, a month, a threshold) from the generator, so one
dataset yields different questions under different seeds. Ambiguous answers (ties for a "which ..."
question, empty selections) are rejected here, so a shipped question has exactly one right answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from environments.tasks.shipped.datasets import Dataset


@dataclass(frozen=True, slots=True)
class Question:
    template: str
    text: str
    code: str
    """Python over ``df`` (the CSV as read by ``pd.read_csv``) that sets ``answer``."""
    abs_tol: float = 0.01


def _num(ds: Dataset, rng: np.random.Generator, with_missing: bool = False) -> str | None:
    cols = [c for c in ds.numeric if not with_missing or ds.frame[c].isna().any()]
    return str(rng.choice(cols)) if cols else None


def _cat_value(ds: Dataset, rng: np.random.Generator) -> tuple[str, str]:
    cat = str(rng.choice(ds.categories))
    return cat, str(rng.choice(sorted(ds.frame[cat].dropna().unique())))


def _unique_top(series: pd.Series) -> bool:
    top = series.sort_values(ascending=False)
    return len(top) > 1 and not np.isclose(top.iloc[0], top.iloc[1])


def mean_of(ds, rng):
    col = _num(ds, rng)
    return Question(
        "mean",
        f"What is the mean of `{col}`, ignoring missing values? Round to 2 decimals.",
        f"answer = df[{col!r}].mean()",
    )


def median_where(ds, rng):
    col, (cat, val) = _num(ds, rng), _cat_value(ds, rng)
    return Question(
        "median_where",
        f'What is the median `{col}` among rows whose `{cat}` is "{val}"? '
        "Ignore missing values; round to 2 decimals.",
        f"answer = df.loc[df[{cat!r}] == {val!r}, {col!r}].median()",
    )


def missing_count(ds, rng):
    col = _num(ds, rng, with_missing=True)
    if col is None:
        return None
    return Question(
        "missing",
        f"How many rows have no value in the `{col}` column?",
        f"answer = int(df[{col!r}].isna().sum())",
        abs_tol=0,
    )


def count_where(ds, rng):
    col, (cat, val) = _num(ds, rng), _cat_value(ds, rng)
    threshold = float(np.round(ds.frame[col].quantile(rng.uniform(0.3, 0.7)), 1))
    return Question(
        "count_where",
        f'How many rows have `{cat}` equal to "{val}" and `{col}` strictly greater than {threshold:g}?',
        f"answer = int(((df[{cat!r}] == {val!r}) & (df[{col!r}] > {threshold!r})).sum())",
        abs_tol=0,
    )


def top_by_total(ds, rng):
    col, cat = _num(ds, rng), str(rng.choice(ds.categories))
    if not _unique_top(ds.frame.groupby(cat)[col].sum()):
        return None
    return Question(
        "top_total",
        f"Which `{cat}` has the largest total `{col}`? Answer with its name only.",
        f"answer = str(df.groupby({cat!r})[{col!r}].sum().idxmax())",
    )


def top_by_mean(ds, rng):
    col, cat = _num(ds, rng), str(rng.choice(ds.categories))
    if not _unique_top(ds.frame.groupby(cat)[col].mean()):
        return None
    return Question(
        "top_mean",
        f"Which `{cat}` has the highest average `{col}` (missing values ignored)? Answer with its name only.",
        f"answer = str(df.groupby({cat!r})[{col!r}].mean().idxmax())",
    )


def month_total(ds, rng):
    col = _num(ds, rng)
    months = sorted(pd.to_datetime(ds.frame[ds.date_col]).dt.strftime("%Y-%m").unique())
    month = str(rng.choice(months))
    label = pd.Timestamp(month + "-01").strftime("%B %Y")
    return Question(
        "month_total",
        f"What is the total `{col}` over rows whose `{ds.date_col}` falls in "
        f"{label}? "
        "Treat missing values as 0; round to 2 decimals.",
        f"dates = pd.to_datetime(df[{ds.date_col!r}])\n"
        f"answer = df.loc[dates.dt.strftime('%Y-%m') == {month!r}, {col!r}].fillna(0).sum()",
    )


def busiest_month(ds, rng):
    counts = pd.to_datetime(ds.frame[ds.date_col]).dt.strftime("%Y-%m").value_counts()
    if not _unique_top(counts):
        return None
    return Question(
        "busiest_month",
        f"Which calendar month has the most rows by `{ds.date_col}`? Answer as YYYY-MM.",
        f"answer = pd.to_datetime(df[{ds.date_col!r}]).dt.strftime('%Y-%m').value_counts().idxmax()",
    )


def std_of(ds, rng):
    col = _num(ds, rng)
    return Question(
        "std",
        f"What is the sample standard deviation (n-1 denominator) of `{col}`, ignoring "
        "missing values? Round to 2 decimals.",
        f"answer = df[{col!r}].std(ddof=1)",
    )


def percentile_of(ds, rng):
    col, pct = _num(ds, rng), int(rng.choice([10, 25, 75, 90, 95]))
    return Question(
        "percentile",
        f"What is the {pct}th percentile of `{col}` (linear interpolation between "
        "closest ranks, missing values ignored)? Round to 2 decimals.",
        f"answer = df[{col!r}].quantile({pct / 100!r})",
    )


def share_pct(ds, rng):
    cat, val = _cat_value(ds, rng)
    return Question(
        "share",
        f'What percentage of all rows have `{cat}` equal to "{val}"? Give a number '
        "between 0 and 100, rounded to 2 decimals.",
        f"answer = 100 * (df[{cat!r}] == {val!r}).mean()",
    )


def correlation(ds, rng):
    if len(ds.numeric) < 2:
        return None
    a, b = (str(c) for c in rng.choice(ds.numeric, size=2, replace=False))
    return Question(
        "correlation",
        f"What is the Pearson correlation between `{a}` and `{b}`, using only "
        "rows where both are present? Round to 3 decimals.",
        f"answer = df[{a!r}].corr(df[{b!r}])",
        abs_tol=0.001,
    )


def mean_gap(ds, rng):
    col, cat = _num(ds, rng), str(rng.choice(ds.categories))
    values = sorted(ds.frame[cat].dropna().unique())
    first, second = (str(v) for v in rng.choice(values, size=2, replace=False))
    return Question(
        "mean_gap",
        f'By how much does the mean `{col}` of rows with `{cat}` = "{first}" '
        "exceed "
        f'that of rows with `{cat}` = "{second}"? Give a negative number if it is lower; '
        "ignore missing values; round to 2 decimals.",
        f"means = df.groupby({cat!r})[{col!r}].mean()\nanswer = means[{first!r}] - means[{second!r}]",
    )


def filled_mean(ds, rng):
    col = _num(ds, rng, with_missing=True)
    if col is None:
        return None
    return Question(
        "filled_mean",
        f"Fill the missing values of `{col}` with that column's median, then give "
        "the mean of the filled column. Round to 2 decimals.",
        f"answer = df[{col!r}].fillna(df[{col!r}].median()).mean()",
    )


def top_weekday(ds, rng):
    col = _num(ds, rng)
    means = ds.frame.groupby(pd.to_datetime(ds.frame[ds.date_col]).dt.day_name())[col].mean()
    if not _unique_top(means):
        return None
    return Question(
        "top_weekday",
        f"On which day of the week (by `{ds.date_col}`) is the average `{col}` "
        "highest? Answer with the day's full English name.",
        f"days = pd.to_datetime(df[{ds.date_col!r}]).dt.day_name()\n"
        f"answer = str(df.groupby(days)[{col!r}].mean().idxmax())",
    )


def rows_between(ds, rng):
    dates = sorted(ds.frame[ds.date_col].unique())
    lo, hi = sorted(str(d) for d in rng.choice(dates, size=2, replace=False))
    return Question(
        "rows_between",
        f"How many rows have `{ds.date_col}` between {lo} and {hi}, both days included?",
        f"dates = pd.to_datetime(df[{ds.date_col!r}])\n"
        f"answer = int(dates.between(pd.Timestamp({lo!r}), pd.Timestamp({hi!r})).sum())",
        abs_tol=0,
    )


def group_max_mean(ds, rng):
    col, cat = _num(ds, rng), str(rng.choice(ds.categories))
    return Question(
        "group_max_mean",
        f"Compute the average `{col}` for each `{cat}` (missing values "
        "ignored). What is the largest of these averages? Round to 2 decimals.",
        f"answer = df.groupby({cat!r})[{col!r}].mean().max()",
    )


def sales_revenue(ds, rng):
    if ds.domain != "sales":
        return None
    _, region = "region", str(rng.choice(sorted(ds.frame["region"].unique())))
    return Question(
        "revenue",
        "Revenue of an order is unit_price × quantity × (1 − discount), where a "
        "missing "
        f'discount means no discount. What is the total revenue of orders from the "{region}" '
        "region? Round to 2 decimals.",
        "revenue = df['unit_price'] * df['quantity'] * (1 - df['discount'].fillna(0))\n"
        f"answer = revenue[df['region'] == {region!r}].sum()",
    )


def conversion_rate(ds, rng):
    if ds.domain != "web":
        return None
    channel = str(rng.choice(sorted(ds.frame["channel"].unique())))
    return Question(
        "conversion",
        f'What share of sessions from the "{channel}" channel converted '
        "(`converted` = 1)? Give a percentage between 0 and 100, rounded to 2 decimals.",
        f"answer = 100 * df.loc[df['channel'] == {channel!r}, 'converted'].mean()",
    )


TEMPLATES: tuple[Callable[[Dataset, np.random.Generator], Question | None], ...] = (
    mean_of,
    median_where,
    missing_count,
    count_where,
    top_by_total,
    top_by_mean,
    month_total,
    busiest_month,
    std_of,
    percentile_of,
    share_pct,
    correlation,
    mean_gap,
    filled_mean,
    top_weekday,
    rows_between,
    group_max_mean,
    sales_revenue,
    conversion_rate,
)
