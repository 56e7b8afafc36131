"""Units of the ``jsutils`` Node.js repository (CommonJS, tested with ``node --test``)."""

from __future__ import annotations

from environments.tasks.shipped.units import Bug, Feature, Lang, Unit, unit_code

CHUNK = unit_code("jsutils/chunk.js")
CHUNK_PAD = unit_code("jsutils/chunk_feature.js")
UNIQ = unit_code("jsutils/uniqBy.js")
UNIQ_PROP = unit_code("jsutils/uniqBy_feature.js")
TITLE = unit_code("jsutils/titleCase.js")
TITLE_SMALL = unit_code("jsutils/titleCase_feature.js")
QUERY = unit_code("jsutils/parseQuery.js")
QUERY_NUMBERS = unit_code("jsutils/parseQuery_feature.js")
DAYS = unit_code("jsutils/daysBetween.js")
DAYS_INCLUSIVE = unit_code("jsutils/daysBetween_feature.js")

JS_UNITS: tuple[Unit, ...] = (
    Unit(
        "jsutils",
        "arrays",
        "chunk",
        "chunk(items, size)",
        "It splits an array into consecutive arrays of `size` items, the last one possibly shorter; a size "
        "that is not a positive integer throws RangeError.",
        CHUNK,
        (
            "assert.deepStrictEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);",
            "assert.deepStrictEqual(chunk([], 3), []);",
            "assert.throws(() => chunk([1], 0), RangeError);",
        ),
        Bug(
            "i < items.length; i += size",
            "i + size <= items.length; i += size",
            "`chunk([1, 2, 3, 4, 5], 2)` drops the 5: the last, shorter chunk is missing.",
        ),
        Feature(
            "accept a third argument `options`; with `{ pad: value }` the last chunk is filled up to "
            "`size` with `value`.",
            CHUNK_PAD,
            (
                "assert.deepStrictEqual(chunk([1, 2, 3], 2, { pad: 0 }), [[1, 2], [3, 0]]);",
                "assert.deepStrictEqual(chunk(['a'], 3, { pad: null }), [['a', null, null]]);",
            ),
        ),
        "chunk(['a', 'b', 'c', 'd', 'e', 'f', 'g'], 3)",
        '[["a", "b", "c"], ["d", "e", "f"], ["g"]]',
        lang=Lang.JS,
    ),
    Unit(
        "jsutils",
        "arrays",
        "uniqBy",
        "uniqBy(items, keyFn)",
        "It returns the items whose `keyFn(item)` has not been seen before, keeping the first item for each "
        "key, in input order.",
        UNIQ,
        (
            "assert.deepStrictEqual(uniqBy([{ id: 1, v: 'a' }, { id: 1, v: 'b' }, { id: 2, v: 'c' }], "
            "(x) => x.id), "
            "[{ id: 1, v: 'a' }, { id: 2, v: 'c' }]);",
            "assert.deepStrictEqual(uniqBy([3, 1, 3, 2, 1], (x) => x), [3, 1, 2]);",
        ),
        Bug(
            """    if (!seen.has(key)) {
      seen.add(key);
      out.push(item);
    }""",
            """    if (seen.has(key)) out.splice(out.findIndex((o) => keyFn(o) === key), 1);
    seen.add(key);
    out.push(item);""",
            "`uniqBy(users, (u) => u.id)` keeps the *last* record for each id and reorders them; we need "
            "the first one, in input order.",
        ),
        Feature(
            "let the second argument also be a property name: `uniqBy(users, 'email')` works like "
            "`uniqBy(users, (u) => u.email)`.",
            UNIQ_PROP,
            (
                "assert.deepStrictEqual(uniqBy([{ e: 'x', n: 1 }, { e: 'x', n: 2 }], 'e'), "
                "[{ e: 'x', n: 1 }]);",
                "assert.deepStrictEqual(uniqBy(['aa', 'b', 'cc'], (s) => s.length), ['aa', 'b']);",
            ),
        ),
        "uniqBy([4, 9, 16, 25, 36], (n) => n % 5)",
        "[4, 16, 25]",
        lang=Lang.JS,
    ),
    Unit(
        "jsutils",
        "strings",
        "titleCase",
        "titleCase(text)",
        "It upper-cases the first letter of every word and lower-cases the rest of it, keeping all spacing; "
        "a word starts at a letter and runs until whitespace or a hyphen.",
        TITLE,
        (
            "assert.strictEqual(titleCase('the GREAT gatsby'), 'The Great Gatsby');",
            "assert.strictEqual(titleCase('jean-luc  picard'), 'Jean-Luc  Picard');",
        ),
        Bug(
            "w[0].toUpperCase() + w.slice(1).toLowerCase()",
            "w[0].toUpperCase() + w.slice(1)",
            "`titleCase('the GREAT gatsby')` gives 'The GREAT Gatsby': the rest of a word is not "
            "lower-cased.",
        ),
        Feature(
            "add a second argument `small`, an array of words (default empty) that stay lower case "
            "unless they are the first word.",
            TITLE_SMALL,
            (
                "assert.strictEqual(titleCase('the lord OF the rings', ['of', 'the']), "
                "'The Lord of the Rings');",
                "assert.strictEqual(titleCase('of mice', ['of']), 'Of Mice');",
            ),
        ),
        "titleCase('o\\'neil mcDONALD-smith')",
        '"O\'neil Mcdonald-Smith"',
        lang=Lang.JS,
    ),
    Unit(
        "jsutils",
        "strings",
        "parseQuery",
        "parseQuery(query)",
        "It parses a URL query string (an optional leading '?'): pairs split on '&', '+' means a space, "
        "keys "
        "and values are URI-decoded, a key without '=' gets '', and a repeated key collects its values into "
        "an array.",
        QUERY,
        (
            "assert.deepStrictEqual(parseQuery('?q=red+shoes&page=2'), { q: 'red shoes', page: '2' });",
            "assert.deepStrictEqual(parseQuery('a=1&a=2&b'), { a: ['1', '2'], b: '' });",
            "assert.deepStrictEqual(parseQuery('x=%C3%A9t%C3%A9'), { x: 'été' });",
        ),
        Bug(
            'const value = decodeURIComponent(rawValue.replace(/\\+/g, " "));',
            "const value = decodeURIComponent(rawValue);",
            "searching for 'red shoes' arrives as `{ q: 'red+shoes' }`: plus signs in values are not turned "
            "into spaces.",
        ),
        Feature(
            "accept a second argument `options`; with `{ numbers: true }` every value that is a plain "
            "decimal number (optional minus, digits, optional fraction) becomes a Number.",
            QUERY_NUMBERS,
            (
                "assert.deepStrictEqual(parseQuery('n=-4.5&id=007&s=1e3', { numbers: true }), "
                "{ n: -4.5, id: 7, s: '1e3' });",
                "assert.deepStrictEqual(parseQuery('n=5'), { n: '5' });",
            ),
        ),
        "parseQuery('tag=a&tag=b+c&empty=&tag=%26')",
        '{"tag": ["a", "b c", "&"], "empty": ""}',
        lang=Lang.JS,
    ),
    Unit(
        "jsutils",
        "dates",
        "daysBetween",
        "daysBetween(start, end)",
        "It returns the number of whole calendar days from `start` to `end`, both 'YYYY-MM-DD' strings read "
        "as UTC dates (negative when `end` is earlier).",
        DAYS,
        (
            "assert.strictEqual(daysBetween('2024-01-01', '2024-03-01'), 60);",
            "assert.strictEqual(daysBetween('2023-02-01', '2023-03-01'), 28);",
            "assert.strictEqual(daysBetween('2023-03-01', '2023-02-01'), -28);",
            "assert.strictEqual(daysBetween('2024-05-05', '2024-05-05'), 0);",
        ),
        Bug(
            "return Date.UTC(y, m - 1, d);",
            "return Date.UTC(y, m, d);",
            "`daysBetween('2023-02-01', '2023-03-01')` returns 31 instead of 28.",
        ),
        Feature(
            "accept a third argument `options`; with `{ inclusive: true }` both end dates count, so the "
            "result is one further from zero (`0` days becomes `1`).",
            DAYS_INCLUSIVE,
            (
                "assert.strictEqual(daysBetween('2024-02-01', '2024-02-29', { inclusive: true }), 29);",
                "assert.strictEqual(daysBetween('2024-02-10', '2024-02-01', { inclusive: true }), -10);",
                "assert.strictEqual(daysBetween('2024-02-10', '2024-02-10', { inclusive: true }), 1);",
            ),
        ),
        "daysBetween('2023-12-25', '2024-03-01')",
        "67",
        lang=Lang.JS,
    ),
)
