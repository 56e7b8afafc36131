"""Units of the ``inventory``, ``stats`` and ``configkit`` Python repositories."""

from __future__ import annotations

from environments.tasks.shipped.units import Bug, Feature, Unit, unit_code

RESTOCK = unit_code("inventory/restock_plan.py")
RESTOCK_CAP = unit_code("inventory/restock_plan_feature.py")
MERGE = unit_code("inventory/merge_counts.py")
MERGE_STRICT = unit_code("inventory/merge_counts_feature.py")
BULK = unit_code("inventory/bulk_price.py")
BULK_COUPON = unit_code("inventory/bulk_price_feature.py")
MEDIAN = unit_code("stats/median.py")
MEDIAN_NONE = unit_code("stats/median_feature.py")
MOVING = unit_code("stats/moving_average.py")
MOVING_STEP = unit_code("stats/moving_average_feature.py")
PERCENTILE = unit_code("stats/percentile.py")
PERCENTILE_NEAREST = unit_code("stats/percentile_feature.py")
PARSE_BOOL = unit_code("configkit/parse_bool.py")
PARSE_BOOL_DEFAULT = unit_code("configkit/parse_bool_feature.py")
DEEP_MERGE = unit_code("configkit/deep_merge.py")
DEEP_MERGE_LISTS = unit_code("configkit/deep_merge_feature.py")

MISC_UNITS: tuple[Unit, ...] = (
    Unit(
        "inventory",
        "stock",
        "restock_plan",
        "restock_plan(levels, minimum, pack=1)",
        "For every SKU in `minimum` whose level (missing from `levels` means 0) is below the minimum, it "
        "orders the shortfall rounded up to a multiple of `pack`; the result maps SKU to units and leaves "
        "out SKUs that need nothing.",
        RESTOCK,
        (
            "restock_plan({'a': 3, 'b': 10}, {'a': 10, 'b': 5}) == {'a': 7}",
            "restock_plan({'a': 3}, {'a': 10, 'c': 1}, pack=6) == {'a': 12, 'c': 6}",
            "restock_plan({}, {}) == {}",
        ),
        Bug(
            "-(-short // pack) * pack",
            "short // pack * pack",
            "with packs of 6, a shortfall of 7 orders 6 units, so the shelf stays below its minimum, and a "
            "shortfall of 1 orders nothing.",
        ),
        Feature(
            "add `max_order: int | None = None`, a cap on units per SKU; the capped amount is rounded "
            "down to whole packs and SKUs left with 0 are dropped.",
            RESTOCK_CAP,
            (
                "restock_plan({'a': 0}, {'a': 50}, pack=6, max_order=20) == {'a': 18}",
                "restock_plan({'a': 0}, {'a': 5}, pack=6, max_order=4) == {}",
            ),
        ),
        "restock_plan({'bolt': 14, 'nut': 2}, {'bolt': 40, 'nut': 2, 'washer': 9}, pack=10)",
    ),
    Unit(
        "inventory",
        "stock",
        "merge_counts",
        "merge_counts(*counts)",
        "It sums several `{sku: count}` dicts into a new dict, leaving out SKUs whose total is zero; the "
        "inputs are not modified.",
        MERGE,
        (
            "merge_counts({'a': 1, 'b': 2}, {'a': 3, 'b': -2}) == {'a': 4}",
            "merge_counts() == {}",
            "(lambda first: (merge_counts(first, {'x': 5}), first)[1])({'x': 1}) == {'x': 1}",
        ),
        Bug(
            """    total: dict[str, int] = {}
    for part in counts:""",
            """    total: dict[str, int] = counts[0] if counts else {}
    for part in counts[1:]:""",
            "after `merge_counts(warehouse, store)` the `warehouse` dict itself holds the totals: the first "
            "argument gets modified.",
        ),
        Feature(
            "add a keyword-only `allow_negative: bool = True`; when false, raise ValueError if any "
            "SKU's "
            "total is below zero.",
            MERGE_STRICT,
            (
                "raises:ValueError:merge_counts({'a': 1}, {'a': -2}, allow_negative=False)",
                "merge_counts({'a': 1}, {'a': 2}, allow_negative=False) == {'a': 3}",
            ),
        ),
        "merge_counts({'pen': 4, 'ink': 1}, {'pen': -4, 'pad': 2}, {'ink': 2})",
    ),
    Unit(
        "inventory",
        "pricing",
        "bulk_price",
        "bulk_price(unit_cents, qty, tiers)",
        "`tiers` lists `(min_qty, percent_off)` pairs in any order. It returns `unit_cents * qty` in cents "
        "after the largest discount whose `min_qty` is reached (integer cents, rounded down).",
        BULK,
        (
            "bulk_price(100, 5, [(10, 5), (50, 10)]) == 500",
            "bulk_price(100, 60, [(10, 5), (50, 10)]) == 5400",
            "bulk_price(333, 3, []) == 999",
        ),
        Bug(
            "best = max((off for min_qty, off in tiers if qty >= min_qty), default=0)",
            "best = next((off for min_qty, off in tiers if qty >= min_qty), 0)",
            "ordering 60 units with tiers `[(10, 5), (50, 10)]` only gets 5% off instead of 10%.",
        ),
        Feature(
            "add `coupon_cents: int = 0`, taken off after the tier discount; the total never goes below 0.",
            BULK_COUPON,
            (
                "bulk_price(100, 10, [(10, 50)], coupon_cents=200) == 300",
                "bulk_price(100, 1, [], coupon_cents=500) == 0",
            ),
        ),
        "bulk_price(1250, 40, [(10, 5), (100, 20), (25, 12)])",
    ),
    Unit(
        "stats",
        "summary",
        "median",
        "median(values)",
        "It returns the middle value of the numbers (the mean of the two middle ones when the count is "
        "even); an empty list raises ValueError.",
        MEDIAN,
        (
            "median([3, 1, 2]) == 2",
            "median([4, 1, 3, 2]) == 2.5",
            "median([7]) == 7",
            "raises:ValueError:median([])",
        ),
        Bug(
            "ordered = sorted(values)",
            "ordered = list(values)",
            "`median([3, 1, 2])` returns 1; the values seem to be used in input order.",
        ),
        Feature(
            "add `skip_none: bool = False`; when true, None entries are dropped first (and a list of "
            "only None raises ValueError).",
            MEDIAN_NONE,
            (
                "median([None, 5, 1, None, 3], skip_none=True) == 3",
                "raises:ValueError:median([None], skip_none=True)",
            ),
        ),
        "median([12, 3, 7, 3, 9, 41])",
    ),
    Unit(
        "stats",
        "summary",
        "moving_average",
        "moving_average(values, window)",
        "It returns the mean of every run of `window` consecutive values (so `len(values) - window + 1` "
        "means); a window outside 1..len(values) raises ValueError.",
        MOVING,
        (
            "moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]",
            "moving_average([5], 1) == [5.0]",
            "moving_average([2, 4, 6], 3) == [4.0]",
            "raises:ValueError:moving_average([1, 2], 3)",
        ),
        Bug(
            "range(len(values) - window + 1)",
            "range(len(values) - window)",
            "the last window is missing: `moving_average([1, 2, 3, 4], 2)` gives `[1.5, 2.5]`.",
        ),
        Feature(
            "add `step: int = 1`: windows start every `step` values (0, step, 2*step, ...); `step < 1` "
            "raises ValueError.",
            MOVING_STEP,
            (
                "moving_average([1, 2, 3, 4, 5], 2, step=2) == [1.5, 3.5]",
                "raises:ValueError:moving_average([1, 2], 1, step=0)",
            ),
        ),
        "moving_average([10, 20, 60, 10, 0], 3)",
    ),
    Unit(
        "stats",
        "summary",
        "percentile",
        "percentile(values, p)",
        "It returns the `p`-th percentile (0 <= p <= 100) with linear interpolation between the closest "
        "ranks, like numpy's default: rank = (n - 1) * p / 100. Empty input or p out of range raises "
        "ValueError.",
        PERCENTILE,
        (
            "percentile([1, 2, 3, 4], 50) == 2.5",
            "percentile([10, 20, 30], 100) == 30",
            "percentile([5, 1, 3], 0) == 1",
            "abs(percentile([1, 2, 3, 4, 5], 90) - 4.6) < 1e-9",
            "raises:ValueError:percentile([], 50)",
        ),
        Bug(
            "rank = (len(ordered) - 1) * p / 100",
            "rank = len(ordered) * p / 100",
            "`percentile([1, 2, 3, 4], 50)` returns 3 and the 100th percentile crashes with IndexError.",
        ),
        Feature(
            "add `method: str = 'linear'`; `'nearest'` returns the value at the rank rounded to the "
            "nearest integer (Python's round), any other method raises ValueError.",
            PERCENTILE_NEAREST,
            (
                "percentile([1, 2, 3, 4, 5], 60, method='nearest') == 3",
                "percentile([10, 20, 30, 40], 90, method='nearest') == 40",
                "raises:ValueError:percentile([1], 5, method='cubic')",
            ),
        ),
        "percentile([15, 20, 35, 40, 50], 40)",
    ),
    Unit(
        "configkit",
        "values",
        "parse_bool",
        "parse_bool(text)",
        "It reads a config flag: 'yes'/'no', 'true'/'false', 'on'/'off', '1'/'0', 'y'/'n' in any case and "
        "with surrounding spaces; an empty string is False; anything else raises ValueError.",
        PARSE_BOOL,
        (
            "parse_bool(' YES ') is True",
            "parse_bool('off') is False",
            "parse_bool('') is False",
            "raises:ValueError:parse_bool('maybe')",
        ),
        Bug(
            "word = text.strip().lower()",
            "word = text.lower()",
            '`FEATURE_X="yes "` in our .env (trailing space) makes `parse_bool` raise ValueError.',
        ),
        Feature(
            "add an optional `default`: when given, text that is not a recognised flag returns "
            "`default` "
            "instead of raising.",
            PARSE_BOOL_DEFAULT,
            (
                "parse_bool('maybe', default=None) is None",
                "parse_bool('perhaps', default=True) is True",
                "raises:ValueError:parse_bool('perhaps')",
            ),
        ),
        "[parse_bool(x) for x in ('On', ' n', '1')]",
    ),
    Unit(
        "configkit",
        "values",
        "deep_merge",
        "deep_merge(base, override)",
        "It returns a new dict where keys of `override` win, except that when both sides hold a dict for "
        "the same key those dicts are merged recursively the same way; neither input is modified.",
        DEEP_MERGE,
        (
            "deep_merge({'a': 1, 'b': {'x': 1, 'y': 2}}, {'b': {'y': 3}, 'c': 4}) == "
            "{'a': 1, 'b': {'x': 1, 'y': 3}, 'c': 4}",
            "deep_merge({'a': {'x': 1}}, {'a': 5}) == {'a': 5}",
            "(lambda b: (deep_merge(b, {'k': {'z': 1}}), b)[1])({'k': {'w': 0}}) == {'k': {'w': 0}}",
        ),
        Bug(
            "merged[key] = deep_merge(merged[key], value)",
            "merged[key].update(value)",
            "after `deep_merge(defaults, user)` our module-level `defaults` has the user's nested settings "
            "in it: the base dict is modified.",
        ),
        Feature(
            "add `concat_lists: bool = False`; when true and both sides hold a list for the same key "
            "(at any depth), the result is the base list followed by the override list.",
            DEEP_MERGE_LISTS,
            (
                "deep_merge({'p': [1], 'q': {'r': [2]}}, {'p': [3], 'q': {'r': [4]}}, "
                "concat_lists=True) == "
                "{'p': [1, 3], 'q': {'r': [2, 4]}}",
                "deep_merge({'p': [1]}, {'p': [3]}) == {'p': [3]}",
            ),
        ),
        "deep_merge({'db': {'host': 'x', 'port': 1}, 'debug': False}, {'db': {'port': 5432}})",
    ),
)
