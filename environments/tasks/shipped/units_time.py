"""Units of the ``timeline`` (dates and durations) and ``graphkit`` (graphs) Python repositories."""

from __future__ import annotations

from environments.tasks.shipped.units import Bug, Feature, Unit, unit_code

BUSINESS = unit_code("timeline/business_days.py")
BUSINESS_HOLIDAYS = unit_code("timeline/business_days_feature.py")
ADD_MONTHS = unit_code("timeline/add_months.py")
ADD_MONTHS_EOM = unit_code("timeline/add_months_feature.py")
QUARTER = unit_code("timeline/quarter.py")
QUARTER_FISCAL = unit_code("timeline/quarter_feature.py")
DURATION = unit_code("timeline/parse_duration.py")
DURATION_WEEKS = unit_code("timeline/parse_duration_feature.py")
HUMANIZE = unit_code("timeline/humanize_age.py")
HUMANIZE_FUTURE = unit_code("timeline/humanize_age_feature.py")
SHORTEST = unit_code("graphkit/shortest_path.py")
SHORTEST_AVOID = unit_code("graphkit/shortest_path_feature.py")
TOPO = unit_code("graphkit/topo_order.py")
TOPO_LEVELS = unit_code("graphkit/topo_order_feature.py")
COMPONENTS = unit_code("graphkit/components.py")
COMPONENTS_NODES = unit_code("graphkit/components_feature.py")
_GRAPH = "{'a': ['b', 'c'], 'b': ['d'], 'c': ['d'], 'd': ['e'], 'e': []}"

TIME_UNITS: tuple[Unit, ...] = (
    Unit(
        "timeline",
        "spans",
        "business_days",
        "business_days(start, end)",
        "It counts the weekdays (Monday to Friday) in the half-open range [start, end) of `datetime.date`s; "
        "`end` before `start` raises ValueError.",
        BUSINESS,
        (
            "business_days(date(2024, 3, 4), date(2024, 3, 11)) == 5",
            "business_days(date(2024, 3, 8), date(2024, 3, 11)) == 1",
            "business_days(date(2024, 3, 9), date(2024, 3, 9)) == 0",
            "raises:ValueError:business_days(date(2024, 3, 9), date(2024, 3, 1))",
        ),
        Bug(
            "range((end - start).days)",
            "range((end - start).days + 1)",
            "`business_days(Mon 2024-03-04, Mon 2024-03-11)` says 6; the end day must not be counted.",
        ),
        Feature(
            "add `holidays` (a collection of dates, default empty); those days are not counted.",
            BUSINESS_HOLIDAYS,
            (
                "business_days(date(2024, 12, 23), date(2024, 12, 28), holidays={date(2024, 12, 25), "
                "date(2024, 12, 26)}) == 3",
                "business_days(date(2024, 3, 4), date(2024, 3, 5), holidays=[date(2024, 3, 9)]) == 1",
            ),
        ),
        "business_days(date(2023, 12, 20), date(2024, 1, 10))",
        imports=("from datetime import date, timedelta",),
        test_imports=("from datetime import date",),
    ),
    Unit(
        "timeline",
        "spans",
        "add_months",
        "add_months(day, months)",
        "It shifts a `datetime.date` by whole months (negative allowed), clamping the day to the last day "
        "of the target month: 2024-01-31 plus one month is 2024-02-29.",
        ADD_MONTHS,
        (
            "add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)",
            "add_months(date(2023, 11, 30), 1) == date(2023, 12, 30)",
            "add_months(date(2023, 12, 15), 1) == date(2024, 1, 15)",
            "add_months(date(2024, 3, 31), -13) == date(2023, 2, 28)",
        ),
        Bug(
            """    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    month += 1""",
            """    year = day.year + (day.month + months) // 12
    month = (day.month + months) % 12 or 12""",
            "`add_months(date(2023, 11, 30), 1)` returns a date in 2024: December lands in the wrong year.",
        ),
        Feature(
            "add `end_of_month: bool = False`: when true and `day` is the last day of its month, the "
            "result is the last day of the target month (2024-02-29 + 1 -> 2024-03-31).",
            ADD_MONTHS_EOM,
            (
                "add_months(date(2024, 2, 29), 1, end_of_month=True) == date(2024, 3, 31)",
                "add_months(date(2024, 4, 30), -2, end_of_month=True) == date(2024, 2, 29)",
                "add_months(date(2024, 4, 15), 1, end_of_month=True) == date(2024, 5, 15)",
            ),
        ),
        "add_months(date(2020, 2, 29), 12).isoformat()",
        imports=("import calendar", "from datetime import date"),
        test_imports=("from datetime import date",),
    ),
    Unit(
        "timeline",
        "spans",
        "quarter",
        "quarter(day)",
        "It labels a `datetime.date` with its calendar quarter as `'YYYY-Qn'`, e.g. `'2024-Q1'` for "
        "January to March.",
        QUARTER,
        (
            "quarter(date(2024, 3, 31)) == '2024-Q1'",
            "quarter(date(2024, 4, 1)) == '2024-Q2'",
            "quarter(date(2023, 12, 1)) == '2023-Q4'",
            "quarter(date(2023, 6, 30)) == '2023-Q2'",
        ),
        Bug(
            "(day.month - 1) // 3 + 1",
            "day.month // 3 + 1",
            "`quarter(date(2024, 3, 31))` is reported as Q2 and December shows up as 'Q5'.",
        ),
        Feature(
            "add `fiscal_start: int = 1`, the month a fiscal year starts. Quarters count from that "
            "month, and the year in the label is the year the fiscal year started. Month numbers "
            "outside 1-12 raise ValueError.",
            QUARTER_FISCAL,
            (
                "quarter(date(2024, 4, 1), fiscal_start=4) == '2024-Q1'",
                "quarter(date(2024, 3, 31), fiscal_start=4) == '2023-Q4'",
                "quarter(date(2024, 12, 1), fiscal_start=10) == '2024-Q1'",
                "raises:ValueError:quarter(date(2024, 1, 1), fiscal_start=13)",
            ),
        ),
        "[quarter(date(2025, m, 1)) for m in (2, 5, 11)]",
        imports=("from datetime import date",),
        test_imports=("from datetime import date",),
    ),
    Unit(
        "timeline",
        "durations",
        "parse_duration",
        "parse_duration(text)",
        "It turns a compact duration such as `'1h30m'`, `'2d'` or `'45s'` into whole seconds. Units are d, "
        "h, m, s, in that order, each at most once; an empty or malformed string raises ValueError.",
        DURATION,
        (
            "parse_duration('1h30m') == 5400",
            "parse_duration('2d') == 172800",
            "parse_duration(' 45s ') == 45",
            "parse_duration('1d2h3m4s') == 93784",
            "raises:ValueError:parse_duration('')",
            "raises:ValueError:parse_duration('10x')",
            "raises:ValueError:parse_duration('5m1h')",
        ),
        Bug(
            "if not text.strip() or match is None:",
            "if match is None:",
            "`parse_duration('')` returns 0 instead of raising, so an empty config field silently means "
            "'no timeout'.",
        ),
        Feature(
            "support weeks: a `w` unit (604800 seconds) before `d`, e.g. `'1w2d'`.",
            DURATION_WEEKS,
            (
                "parse_duration('1w2d') == 777600",
                "parse_duration('3w') == 1814400",
                "raises:ValueError:parse_duration('1d1w')",
            ),
        ),
        "parse_duration('1d12h')",
        imports=("import re",),
    ),
    Unit(
        "timeline",
        "durations",
        "humanize_age",
        "humanize_age(seconds)",
        "It describes an age in seconds: `'just now'` under 5 seconds, otherwise `'<n> <unit> ago'` in the "
        "largest unit (day, hour, minute, second) that fits at least once, n rounded down, with a plural "
        "'s' unless n is 1.",
        HUMANIZE,
        (
            "humanize_age(3) == 'just now'",
            "humanize_age(42) == '42 seconds ago'",
            "humanize_age(61) == '1 minute ago'",
            "humanize_age(7200) == '2 hours ago'",
            "humanize_age(86400 * 3 + 5) == '3 days ago'",
        ),
        Bug("{'' if count == 1 else 's'}", "s", "a post from a minute ago shows '1 minutes ago'."),
        Feature(
            "handle the future: a negative `seconds` gives `'in <n> <unit>'` (for example "
            "`humanize_age(-7200)` -> `'in 2 hours'`); anything within 5 seconds either way is "
            "`'just now'`.",
            HUMANIZE_FUTURE,
            (
                "humanize_age(-7200) == 'in 2 hours'",
                "humanize_age(-60) == 'in 1 minute'",
                "humanize_age(-4) == 'just now'",
            ),
        ),
        "humanize_age(100000)",
    ),
    Unit(
        "graphkit",
        "paths",
        "shortest_path",
        "shortest_path(graph, start, goal)",
        "`graph` maps each node to its list of successors. It returns the fewest-hops path from `start` to "
        "`goal` as a list of nodes including both ends, or None if there is none; among equally short "
        "paths the one found first by breadth-first search in listed order wins.",
        SHORTEST,
        (
            f"shortest_path({_GRAPH}, 'a', 'e') == ['a', 'b', 'd', 'e']",
            f"shortest_path({_GRAPH}, 'c', 'c') == ['c']",
            f"shortest_path({_GRAPH}, 'e', 'a') is None",
        ),
        Bug(
            "path.append(previous[path[-1]])\n            return path[::-1]",
            "path.append(previous[path[-1]])\n            return path[:0:-1]",
            "`shortest_path(g, 'a', 'e')` returns `['b', 'd', 'e']`: the start node is missing.",
        ),
        Feature(
            "add `avoid` (a set of nodes, default empty): the path must not pass through any of them; "
            "if `start` or `goal` is avoided there is no path.",
            SHORTEST_AVOID,
            (
                f"shortest_path({_GRAPH}, 'a', 'e', avoid={{'b'}}) == ['a', 'c', 'd', 'e']",
                f"shortest_path({_GRAPH}, 'a', 'e', avoid={{'d'}}) is None",
            ),
        ),
        "shortest_path({'s': ['x', 'y'], 'x': ['t'], 'y': ['z'], 'z': ['t'], 't': []}, 's', 't')",
        imports=("from collections import deque",),
    ),
    Unit(
        "graphkit",
        "paths",
        "topo_order",
        "topo_order(deps)",
        "`deps` maps each item to the items it depends on. It returns all items (keys and dependencies) so "
        "that every item follows its dependencies, choosing the alphabetically first ready item each step; "
        "a cycle raises ValueError.",
        TOPO,
        (
            "topo_order({'app': ['lib', 'log'], 'lib': ['log'], 'log': []}) == ['log', 'lib', 'app']",
            "topo_order({'b': [], 'a': []}) == ['a', 'b']",
            "raises:ValueError:topo_order({'x': ['y'], 'y': ['x']})",
        ),
        Bug(
            """        if not ready:
            raise ValueError(f"dependency cycle among {sorted(waiting)}")
""",
            """        if not ready:
            break
""",
            "with a cycle (`{'x': ['y'], 'y': ['x']}`) `topo_order` quietly returns `[]` instead of failing.",
        ),
        Feature(
            "add `levels: bool = False`; when true return a list of batches: each batch is the sorted "
            "list of every item whose dependencies are all in earlier batches.",
            TOPO_LEVELS,
            (
                "topo_order({'app': ['lib', 'log'], 'lib': ['log'], 'cli': ['log']}, levels=True) == "
                "[['log'], ['cli', 'lib'], ['app']]",
                "raises:ValueError:topo_order({'x': ['x']}, levels=True)",
            ),
        ),
        "topo_order({'deploy': ['test', 'build'], 'test': ['build'], 'build': ['fetch'], 'docs': []})",
    ),
    Unit(
        "graphkit",
        "paths",
        "components",
        "components(edges)",
        "It returns the connected components of the undirected graph given by `edges` (pairs of node "
        "names): each component a sorted list, the list of components ordered by first member.",
        COMPONENTS,
        (
            "components([('a', 'b'), ('c', 'd'), ('b', 'e')]) == [['a', 'b', 'e'], ['c', 'd']]",
            "components([('z', 'y'), ('y', 'x')]) == [['x', 'y', 'z']]",
            "components([]) == []",
        ),
        Bug(
            "        adjacent.setdefault(b, set()).add(a)\n",
            "        adjacent.setdefault(b, set())\n",
            "edges are treated as one-way: `components([('z', 'y'), ('y', 'x')])` splits into three groups.",
        ),
        Feature(
            "add `nodes` (a collection of node names, default empty) so that nodes without edges can be "
            "given; each isolated node is a component of its own.",
            COMPONENTS_NODES,
            (
                "components([('a', 'b')], nodes=['c', 'a']) == [['a', 'b'], ['c']]",
                "components([], nodes=('q',)) == [['q']]",
            ),
        ),
        "len(components([('a', 'b'), ('c', 'd'), ('e', 'f'), ('b', 'c')]))",
    ),
)
