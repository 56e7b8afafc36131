"""Per-unit generators of fresh hidden inputs, drawn by the judge at every verification.

A fixed handful of hidden cases can be beaten by an answer table (the reference's value for each known
input, anything elsewhere), and a policy that meets the same tasks again and again can learn that table
from the reward alone. So the judge (``environments/integrity/probe.py``) also draws inputs of its own
each time it runs, from a seed it picks and prints, and computes their expected values from the reference
inside the judge process. A generator here is ``gen_<unit>(rng, feature) -> str``: one call expression (a
Python expression, or a JavaScript one for the JS units) for the unit's plain behaviour (``feature`` false:
repair and build) or for its feature request (``feature`` true: extend; the new argument in most calls).

Generators stay inside what the instruction pins down: inputs whose value the spec leaves open (ties a
spec does not order, float round-off at a rounding boundary, an edge the feature request does not cover)
are not drawn. Each generator's source, with the helpers above it, is copied into the judge's hidden spec
(``generator_source``) and run there with ``random.Random(seed)``: standard library only, Python 3.8+.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

WORDS = ("alpha", "beta", "red", "shoes", "data", "x", "map", "report", "new", "it", "zone", "q", "the", "of")


def _words(rng, low=1, high=5):
    return [rng.choice(WORDS) for _ in range(rng.randint(low, high))]


def _messy(rng):
    """Words with mixed case, digits and punctuation between them."""
    parts = []
    for word in _words(rng, 1, 5):
        word = word.upper() if rng.random() < 0.3 else word.capitalize() if rng.random() < 0.3 else word
        parts.append(word + (str(rng.randint(0, 99)) if rng.random() < 0.2 else ""))
    out = ""
    for part in parts:
        out += rng.choice((" ", "  ", ", ", " & ", "-", "_", "!", ".")) + part
    return rng.choice(("", " ", "--", "(")) + out.strip() + rng.choice(("", "!", " ", "..."))


def _date(rng):
    from datetime import date, timedelta

    return date(2019, 1, 1) + timedelta(days=rng.randint(0, 365 * 8))


def _pdate(day):
    return f"date({day.year}, {day.month}, {day.day})"


def _js(value):
    import json

    return json.dumps(value, ensure_ascii=False)


def gen_slugify(rng, feature):
    if feature:
        return f"slugify({_messy(rng)!r}, max_length={rng.randint(1, 24)})"
    return f"slugify({_messy(rng)!r}, sep={rng.choice('-_.')!r})"


def gen_truncate(rng, feature):
    if feature:
        text = rng.choice(("a", "to", "the")) + " " + " ".join(_words(rng, 2, 6))
        return f"truncate({text!r}, {rng.randint(7, max(7, len(text) + 2))}, whole_words=True)"
    text = " ".join(_words(rng, 1, 6))
    suffix = rng.choice(("...", "~", "..", " [more]"))
    width = rng.randint(max(0, len(suffix) - 1), max(len(suffix), len(text) + 2))
    return f"truncate({text!r}, {width}, suffix={suffix!r})"


def gen_word_count(rng, feature):
    words = [w.upper() if rng.random() < 0.3 else w for w in _words(rng, 0, 8)]
    words += ["don't"] * rng.randint(0, 2) + ["'quoted'"] * rng.randint(0, 1)
    rng.shuffle(words)
    text = rng.choice((" ", ", ", "! ")).join(words)
    if feature:
        stop = [rng.choice(WORDS).upper() if rng.random() < 0.5 else rng.choice(WORDS) for _ in range(3)]
        kind = rng.choice(("set", "list", "tuple"))
        shown = (
            "{" + ", ".join(map(repr, stop)) + "}"
            if kind == "set"
            else repr(stop if kind == "list" else tuple(stop))
        )
        return f"word_count({text!r}, stopwords={shown})"
    return f"word_count({text!r})"


def gen_camel_to_snake(rng, feature):
    parts, acronym = [], False
    for i in range(rng.randint(1, 4)):
        word = rng.choice(("user", "parse", "file", "server", "name", "error", "value"))
        if not acronym and rng.random() < 0.3:
            part, acronym = rng.choice(("HTTP", "XML", "ID", "URL", "API")), True
        else:
            part, acronym = (word if i == 0 and rng.random() < 0.5 else word.capitalize()), False
        parts.append(part)
    name = "".join(parts)
    if feature:
        return f"camel_to_snake({name!r}, sep={rng.choice(('-', '.', '/'))!r})"
    return f"camel_to_snake({name!r})"


def gen_wrap(rng, feature):
    words = range(rng.randint(0, 8))
    text = " ".join("".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 9))) for _ in words)
    if feature:
        indent = rng.choice(("", "> ", "  ", "# "))
        return f"wrap({text!r}, {rng.randint(len(indent) + 1, 18)}, indent={indent!r})"
    return f"wrap({text!r}, {rng.randint(1, 16)})"


def _amount(rng, decimal=".", group=","):
    cents = rng.randint(0, 10**7)
    whole, frac = divmod(cents, 100)
    body = f"{whole:,}".replace(",", group) if rng.random() < 0.6 else str(whole)
    places = rng.choice((0, 1, 2, 2))
    if places:
        body += decimal + f"{frac:02d}"[:places]
    if rng.random() < 0.3:
        body = "$" + body
    sign = rng.random()
    return ("-" + body if sign < 0.2 else f"({body})" if sign < 0.35 else body) + rng.choice(("", " "))


def gen_parse_cents(rng, feature):
    if feature:
        if rng.random() < 0.5:
            return f"parse_cents({_amount(rng, ',', '.')!r}, decimal=',')"
        return f"parse_cents({_amount(rng)!r}, decimal='.')"
    if rng.random() < 0.1:
        return f"parse_cents({rng.choice(('12.345', 'abc', '1.2.3', '$'))!r})"
    return f"parse_cents({_amount(rng)!r})"


def gen_split_evenly(rng, feature):
    total = rng.randint(0, 10000)
    if feature:
        # The weights sum to a power of two, so every share total*w/sum is exact in floating point and
        # equal remainders really are ties (which the spec breaks by position).
        parts = rng.randint(1, 6)
        size = 2 ** rng.randint(max(0, (parts - 1).bit_length()), 5)
        cuts = sorted(rng.sample(range(1, size), parts - 1)) if parts > 1 else []
        weights = [b - a for a, b in zip([0, *cuts], [*cuts, size])]  # noqa: B905 - runs in the judge, Python 3.8+
        return f"split_evenly({total}, {parts}, weights={weights})"
    return f"split_evenly({total}, {rng.randint(1, 12)})"


def gen_apply_discount(rng, feature):
    cents, percent = rng.randint(0, 100000), rng.choice((rng.randint(0, 100), rng.randint(0, 99) + 0.5))
    if feature:
        return f"apply_discount({cents}, {percent}, cap_cents={rng.randint(0, 5000)})"
    if rng.random() < 0.1:
        return f"apply_discount({cents}, {rng.choice((-5, 100.5, 250))})"
    return f"apply_discount({cents}, {percent})"


def gen_progressive_tax(rng, feature):
    limits = sorted(rng.sample(range(1, 200), rng.randint(0, 3)))
    rates = sorted(rng.sample(range(0, 20), len(limits) + 1))
    brackets = [(limit * 1000, rate * 5 / 100) for limit, rate in zip(limits, rates)]  # noqa: B905 - one more rate than limits
    brackets.append((None, rates[-1] * 5 / 100))
    income = rng.randint(0, 250) * 1000 + rng.randint(0, 999)
    if feature:
        return f"progressive_tax({income}, {brackets}, deduction={rng.randint(0, 60000)})"
    return f"progressive_tax({income}, {brackets})"


def gen_format_cents(rng, feature):
    cents = rng.choice((rng.randint(-(10**9), 10**9), rng.randint(-999, 999)))
    if feature:
        return f"format_cents({cents}, accounting={rng.random() < 0.7})"
    return f"format_cents({cents}, symbol={rng.choice(('$', 'EUR ', '£', ''))!r})"


def gen_business_days(rng, feature):
    from datetime import timedelta

    start = _date(rng)
    end = start + timedelta(days=rng.randint(-3 if not feature else 0, 40))
    if feature:
        days = [start + timedelta(days=rng.randint(-2, 42)) for _ in range(rng.randint(0, 4))]
        shown = ", ".join(map(_pdate, days))
        holidays = rng.choice(("[" + shown + "]", "(" + shown + ("," if len(days) == 1 else "") + ")"))
        return f"business_days({_pdate(start)}, {_pdate(end)}, holidays={holidays})"
    return f"business_days({_pdate(start)}, {_pdate(end)})"


def gen_add_months(rng, feature):
    import calendar
    from datetime import date

    day = _date(rng)
    if rng.random() < 0.5:
        day = date(day.year, day.month, calendar.monthrange(day.year, day.month)[1])
    months = rng.randint(-40, 40)
    if feature:
        return f"add_months({_pdate(day)}, {months}, end_of_month={rng.random() < 0.8})"
    return f"add_months({_pdate(day)}, {months})"


def gen_quarter(rng, feature):
    if feature:
        return f"quarter({_pdate(_date(rng))}, fiscal_start={rng.randint(1, 12)})"
    return f"quarter({_pdate(_date(rng))})"


def gen_parse_duration(rng, feature):
    units = "wdhms" if feature else "dhms"
    chosen = [u for u in units if rng.random() < 0.5] or [rng.choice(units)]
    text = "".join(f"{rng.randint(0, 99)}{u}" for u in chosen)
    if rng.random() < 0.15 and len(chosen) > 1:
        text = "".join(f"{rng.randint(1, 9)}{u}" for u in reversed(chosen))  # out of order: ValueError
    return f"parse_duration({rng.choice(('', ' ')) + text!r})"


def gen_humanize_age(rng, feature):
    size = rng.choice((1, 1, 60, 3600, 86400))
    seconds = rng.randint(0, 100) * size + rng.randint(0, size - 1)
    if feature and rng.random() < 0.6:
        seconds = -seconds
    return f"humanize_age({seconds})"


def gen_shortest_path(rng, feature):
    nodes = list("abcdefg")[: rng.randint(2, 7)]
    graph = {n: sorted(rng.sample(nodes, rng.randint(0, min(3, len(nodes))))) for n in nodes}
    for targets in graph.values():
        rng.shuffle(targets)
    start, goal = rng.choice(nodes), rng.choice(nodes)
    if feature:
        avoid = "{" + ", ".join(repr(n) for n in rng.sample(nodes, rng.randint(0, 2))) + "}"
        avoid = avoid if avoid != "{}" else "set()"
        return f"shortest_path({graph!r}, {start!r}, {goal!r}, avoid={avoid})"
    return f"shortest_path({graph!r}, {start!r}, {goal!r})"


def gen_topo_order(rng, feature):
    names = rng.sample(("app", "lib", "log", "cli", "db", "web", "api", "core"), rng.randint(1, 7))
    deps = {n: sorted(rng.sample(names[:i], rng.randint(0, min(2, i)))) for i, n in enumerate(names)}
    if rng.random() < 0.1 and len(names) > 1:
        deps[names[0]] = [names[-1]]  # a cycle: ValueError
    items = list(deps.items())
    rng.shuffle(items)
    deps = dict(items)
    if feature:
        return f"topo_order({deps!r}, levels={rng.random() < 0.8})"
    return f"topo_order({deps!r})"


def gen_components(rng, feature):
    nodes = list("abcdefghij")[: rng.randint(2, 10)]
    edges = [tuple(rng.sample(nodes, 2)) for _ in range(rng.randint(0, 6))]
    if feature:
        extra = rng.sample(list("abcdefghijklm"), rng.randint(0, 4))
        shown = repr(extra) if rng.random() < 0.5 else repr(tuple(extra))
        return f"components({edges!r}, nodes={shown})"
    return f"components({edges!r})"


def gen_restock_plan(rng, feature):
    skus = rng.sample(("bolt", "nut", "washer", "pin", "clip", "gear"), rng.randint(0, 5))
    levels = {s: rng.randint(0, 60) for s in skus if rng.random() < 0.7}
    minimum = {s: rng.randint(0, 80) for s in skus}
    pack = rng.randint(1, 12)
    if feature:
        return f"restock_plan({levels!r}, {minimum!r}, pack={pack}, max_order={rng.randint(0, 90)})"
    return f"restock_plan({levels!r}, {minimum!r}, pack={pack})"


def gen_merge_counts(rng, feature):
    parts = [
        {s: rng.randint(-3, 9) for s in rng.sample(("pen", "ink", "pad", "cap"), rng.randint(0, 4))}
        for _ in range(rng.randint(0, 4))
    ]
    args = ", ".join(map(repr, parts))
    if feature:
        return f"merge_counts({args}{', ' if args else ''}allow_negative={rng.random() < 0.5})"
    return f"merge_counts({args})"


def gen_bulk_price(rng, feature):
    tiers = [(rng.randint(1, 100), rng.randint(0, 60)) for _ in range(rng.randint(0, 4))]
    unit, qty = rng.randint(1, 5000), rng.randint(0, 150)
    if feature:
        return f"bulk_price({unit}, {qty}, {tiers!r}, coupon_cents={rng.randint(0, 20000)})"
    return f"bulk_price({unit}, {qty}, {tiers!r})"


def gen_median(rng, feature):
    values = [rng.randint(-50, 100) for _ in range(rng.randint(0 if rng.random() < 0.1 else 1, 9))]
    if feature:
        for _ in range(rng.randint(0, 3)):
            values.insert(rng.randint(0, len(values)), None)
        return f"median({values!r}, skip_none=True)"
    return f"median({values!r})"


def gen_moving_average(rng, feature):
    values = [rng.randint(-20, 100) for _ in range(rng.randint(1, 10))]
    window = rng.randint(1, len(values) + (1 if rng.random() < 0.1 else 0))
    if feature:
        return f"moving_average({values!r}, {window}, step={rng.randint(1, 4)})"
    return f"moving_average({values!r}, {window})"


def gen_percentile(rng, feature):
    values = [rng.randint(-50, 200) for _ in range(rng.randint(1, 9))]
    p = rng.randint(0, 100)
    if feature:
        while (len(values) - 1) * p % 100 == 50:  # a rank of .5: Python's round is pinned, but keep clear
            p = rng.randint(0, 100)
        return f"percentile({values!r}, {p}, method={rng.choice(('nearest', 'linear'))!r})"
    return f"percentile({values!r}, {p})"


def gen_parse_bool(rng, feature):
    words = ("yes", "no", "true", "false", "on", "off", "1", "0", "y", "n", "")
    word = rng.choice(words)
    word = "".join(c.upper() if rng.random() < 0.5 else c for c in word)
    word = rng.choice(("", " ", "  ")) + word + rng.choice(("", " ", "\t"))
    if feature:
        if rng.random() < 0.6:
            word = rng.choice(("maybe", "enabled", "2", "nope", "tru"))
        return f"parse_bool({word!r}, default={rng.choice((None, True, False, 'x', 0))!r})"
    return f"parse_bool({word!r})"


def _tree(rng, depth, lists):
    out = {}
    for key in rng.sample(("a", "b", "db", "port", "host", "opts", "k"), rng.randint(0, 4)):
        roll = rng.random()
        if depth < 2 and roll < 0.35:
            out[key] = _tree(rng, depth + 1, lists)
        elif lists and roll < 0.6:
            out[key] = [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
        else:
            out[key] = rng.choice((rng.randint(0, 99), "x", True, None))
    return out


def gen_deep_merge(rng, feature):
    base, override = _tree(rng, 0, feature), _tree(rng, 0, feature)
    if feature:
        return f"deep_merge({base!r}, {override!r}, concat_lists={rng.random() < 0.8})"
    return f"deep_merge({base!r}, {override!r})"


def gen_chunk(rng, feature):
    items = [rng.choice((rng.randint(0, 99), rng.choice("abcdef"), None)) for _ in range(rng.randint(0, 9))]
    size = rng.randint(1, 5)
    if feature:
        return f"chunk({_js(items)}, {size}, {{ pad: {_js(rng.choice((0, 'z', None, False)))} }})"
    if rng.random() < 0.1:
        bad = rng.choice(("0", "-1", "1.5", '"2"'))
        return f"chunk({_js(items)}, {bad})"
    return f"chunk({_js(items)}, {size})"


def gen_uniqBy(rng, feature):
    items = [{"id": rng.randint(1, 4), "e": rng.choice("xyz"), "n": i} for i in range(rng.randint(0, 7))]
    if feature and rng.random() < 0.7:
        return f"uniqBy({_js(items)}, {_js(rng.choice(('id', 'e')))})"
    if rng.random() < 0.5:
        values = _js([rng.randint(0, 20) for _ in range(rng.randint(0, 9))])
        return f"uniqBy({values}, (n) => n % {rng.randint(1, 6)})"
    return f"uniqBy({_js(items)}, (x) => x.{rng.choice(('id', 'e'))})"


def gen_titleCase(rng, feature):
    words = [w.upper() if rng.random() < 0.3 else w for w in _words(rng, 1, 6)]
    text = "".join(w + rng.choice((" ", "  ", "-")) for w in words).rstrip(" -")
    if feature:
        small = rng.sample(("of", "the", "a", "x", "it"), rng.randint(0, 3))
        return f"titleCase({_js(text)}, {_js(small)})"
    return f"titleCase({_js(text)})"


def gen_parseQuery(rng, feature):
    pairs = []
    for _ in range(rng.randint(0, 5)):
        key = rng.choice(("q", "page", "tag", "n", "a b"))
        value = rng.choice(("red+shoes", "2", "-4.5", "007", "1e3", "%C3%A9t%C3%A9", "x%26y", "", "3.25"))
        pairs.append(key.replace(" ", "+") + ("" if rng.random() < 0.1 else "=" + value))
    query = rng.choice(("", "?")) + "&".join(pairs)
    if feature:
        return f"parseQuery({_js(query)}, {{ numbers: {_js(rng.random() < 0.8)} }})"
    return f"parseQuery({_js(query)})"


def gen_daysBetween(rng, feature):
    from datetime import timedelta

    start = _date(rng)
    end = start + timedelta(days=rng.randint(-400, 400))
    if feature:
        inclusive = _js(rng.random() < 0.8)
        return f"daysBetween({_js(start.isoformat())}, {_js(end.isoformat())}, {{ inclusive: {inclusive} }})"
    return f"daysBetween({_js(start.isoformat())}, {_js(end.isoformat())})"


HELPERS: tuple[Callable, ...] = (_words, _messy, _date, _pdate, _js, _amount, _tree)
GENERATORS: dict[str, Callable[..., str]] = {
    name.removeprefix("gen_"): fn for name, fn in globals().items() if name.startswith("gen_")
}
GENERATED_PER_VERIFY = 8
"""Inputs drawn at each verification (before duplicates are dropped)."""


def generator_source(name: str) -> str:
    """The helpers and ``gen_<name>``, as source the judge runs (``WORDS`` included)."""
    parts = [f"WORDS = {WORDS!r}\n"] + [inspect.getsource(fn) for fn in (*HELPERS, GENERATORS[name])]
    return "\n\n".join(parts)
