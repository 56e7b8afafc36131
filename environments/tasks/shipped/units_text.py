"""Units of the ``textkit`` (strings) and ``ledger`` (money) Python repositories."""

from __future__ import annotations

from environments.tasks.shipped.units import Bug, Feature, Unit, unit_code

SLUGIFY = unit_code("textkit/slugify.py")
SLUGIFY_MAX = unit_code("textkit/slugify_feature.py")
TRUNCATE = unit_code("textkit/truncate.py")
TRUNCATE_WORDS = unit_code("textkit/truncate_feature.py")
WORD_COUNT = unit_code("textkit/word_count.py")
WORD_COUNT_STOP = unit_code("textkit/word_count_feature.py")
CAMEL = unit_code("textkit/camel_to_snake.py")
CAMEL_SEP = unit_code("textkit/camel_to_snake_feature.py")
WRAP = unit_code("textkit/wrap.py")
WRAP_INDENT = unit_code("textkit/wrap_feature.py")
PARSE_CENTS = unit_code("ledger/parse_cents.py")
PARSE_CENTS_COMMA = unit_code("ledger/parse_cents_feature.py")
SPLIT = unit_code("ledger/split_evenly.py")
SPLIT_WEIGHTS = unit_code("ledger/split_evenly_feature.py")
DISCOUNT = unit_code("ledger/apply_discount.py")
DISCOUNT_CAP = unit_code("ledger/apply_discount_feature.py")
TAX = unit_code("ledger/progressive_tax.py")
TAX_DEDUCTION = unit_code("ledger/progressive_tax_feature.py")
FORMAT = unit_code("ledger/format_cents.py")
FORMAT_ACCOUNTING = unit_code("ledger/format_cents_feature.py")

TEXT_UNITS: tuple[Unit, ...] = (
    Unit(
        "textkit",
        "slug",
        "slugify",
        "slugify(text, sep='-')",
        "It lower-cases the text, replaces every run of characters other than a-z and 0-9 with `sep`, and "
        "strips `sep` from both ends.",
        SLUGIFY,
        (
            "slugify('Hello, World!') == 'hello-world'",
            "slugify('  Rock & Roll  ', sep='_') == 'rock_roll'",
            "slugify('2024 Annual Report') == '2024-annual-report'",
            "slugify('---') == ''",
        ),
        Bug(
            ".strip(sep)",
            ".lstrip(sep)",
            "`slugify('Hello, World!')` returns `'hello-world-'`, with a "
            "trailing dash, so our URLs end in '-'.",
        ),
        Feature(
            "add an optional `max_length: int | None = None`. When the slug is longer, cut it at the "
            "last separator that keeps it within `max_length` (no trailing separator); if there is no "
            "separator in reach, cut the characters hard at `max_length`.",
            SLUGIFY_MAX,
            (
                "slugify('The quick brown fox', max_length=10) == 'the-quick'",
                "slugify('Supercalifragilistic', max_length=5) == 'super'",
                "slugify('ab cd', max_length=5) == 'ab-cd'",
                "slugify('ab cd ef', max_length=6) == 'ab-cd'",
            ),
        ),
        "slugify('Rock & Roll -- 1959!', sep='_')",
        imports=("import re",),
    ),
    Unit(
        "textkit",
        "slug",
        "truncate",
        "truncate(text, width, suffix='...')",
        "It returns `text` unchanged when it fits in `width` characters; otherwise it keeps the first "
        "`width - len(suffix)` characters, strips trailing spaces and appends `suffix`. A `width` shorter "
        "than the suffix raises ValueError.",
        TRUNCATE,
        (
            "truncate('hello', 5) == 'hello'",
            "truncate('hello world', 8) == 'hello...'",
            "truncate('abcdef', 4, suffix='~') == 'abc~'",
            "raises:ValueError:truncate('abc', 2)",
        ),
        Bug(
            "if len(text) <= width:",
            "if len(text) < width:",
            "`truncate('hello', 5)` gives `'he...'` although 'hello' is exactly five characters and fits.",
        ),
        Feature(
            "add `whole_words: bool = False`. When true and the cut would split a word, drop that "
            "partial word (cut at the last space of the kept part) before adding the suffix.",
            TRUNCATE_WORDS,
            (
                "truncate('the quick brown fox', 12, whole_words=True) == 'the quick...'",
                "truncate('the quick brown fox', 13, whole_words=True) == 'the quick...'",
                "truncate('abcdefghij', 6, whole_words=True) == 'abc...'",
            ),
        ),
        "truncate('Meeting notes for Tuesday', 14)",
    ),
    Unit(
        "textkit",
        "slug",
        "word_count",
        "word_count(text)",
        "It returns a dict mapping each word to how often it occurs. Words are runs of letters and "
        "apostrophes, compared case-insensitively (keys are lower case); apostrophes at a word's ends are "
        "dropped.",
        WORD_COUNT,
        (
            "word_count('The cat and the hat') == {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}",
            "word_count(\"Don't stop, DON'T!\") == {\"don't\": 2, 'stop': 1}",
            "word_count('') == {}",
        ),
        Bug(
            "text.lower()",
            "text",
            "`word_count('The cat and the hat')` reports 'the' once: capitalised "
            "words are not counted at all.",
        ),
        Feature(
            "add `stopwords` (any collection of strings, default empty): those words, compared "
            "case-insensitively, are left out of the result.",
            WORD_COUNT_STOP,
            (
                "word_count('The cat and the hat', stopwords={'the', 'AND'}) == {'cat': 1, 'hat': 1}",
                "word_count('a a b', stopwords=['a']) == {'b': 1}",
            ),
        ),
        "word_count(\"It's what it is, isn't it?\")",
    ),
    Unit(
        "textkit",
        "case",
        "camel_to_snake",
        "camel_to_snake(name)",
        "It converts CamelCase or camelCase to snake_case, keeping acronyms together: `HTTPServerError` "
        "becomes `http_server_error`, `userID2Name` becomes `user_id2_name`.",
        CAMEL,
        (
            "camel_to_snake('HTTPServerError') == 'http_server_error'",
            "camel_to_snake('userId') == 'user_id'",
            "camel_to_snake('parseXMLFile') == 'parse_xml_file'",
            "camel_to_snake('already_snake') == 'already_snake'",
        ),
        Bug(
            '    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\\1_\\2", name)\n',
            "",
            "acronyms run into the next word: `camel_to_snake('HTTPServerError')` gives "
            "`'httpserver_error'`.",
        ),
        Feature(
            "add `sep: str = '_'`, the separator to join words with, so `sep='-'` gives kebab-case.",
            CAMEL_SEP,
            (
                "camel_to_snake('parseXMLFile', sep='-') == 'parse-xml-file'",
                "camel_to_snake('userId', sep='.') == 'user.id'",
            ),
        ),
        "camel_to_snake('getHTTPResponseCode')",
        imports=("import re",),
    ),
    Unit(
        "textkit",
        "case",
        "wrap",
        "wrap(text, width)",
        "Greedy word wrap: it returns the lines (a list of str) formed by adding words separated by single "
        "spaces while the line stays within `width`; a word longer than `width` gets a line of its own. "
        "`width < 1` raises ValueError.",
        WRAP,
        (
            "wrap('the quick brown fox', 10) == ['the quick', 'brown fox']",
            "wrap('a bb ccc', 4) == ['a bb', 'ccc']",
            "wrap('extraordinary word', 5) == ['extraordinary', 'word']",
            "wrap('', 3) == []",
            "raises:ValueError:wrap('x', 0)",
        ),
        Bug(
            "len(line) + 1 + len(word) <= width",
            "len(line) + 1 + len(word) < width",
            "lines come out one character short: `wrap('a bb ccc', 4)` gives `['a', 'bb', 'ccc']` but "
            "'a bb' fits in four characters.",
        ),
        Feature(
            "add `indent: str = ''`, a prefix put in front of every line and counted in `width`; raise "
            "ValueError when the indent leaves no room (`len(indent) >= width`).",
            WRAP_INDENT,
            (
                "wrap('one two three', 9, indent='> ') == ['> one two', '> three']",
                "raises:ValueError:wrap('x', 2, indent='  ')",
            ),
        ),
        "wrap('pack my box with five dozen liquor jugs', 12)",
    ),
    Unit(
        "ledger",
        "money",
        "parse_cents",
        "parse_cents(text)",
        "It parses a money amount such as `'$1,234.5'` into integer cents (123450). A leading '-' or "
        "accounting parentheses `'(12.00)'` make it negative; at most two decimals; anything else raises "
        "ValueError.",
        PARSE_CENTS,
        (
            "parse_cents('$1,234.5') == 123450",
            "parse_cents('(12.00)') == -1200",
            "parse_cents('-3.05') == -305",
            "parse_cents('7') == 700",
            "raises:ValueError:parse_cents('12.345')",
            "raises:ValueError:parse_cents('abc')",
        ),
        Bug(
            'int((frac + "00")[:2])',
            "int(frac.zfill(2) if frac else 0)",
            "`parse_cents('$1,234.5')` returns 123405, not 123450: one-decimal amounts lose their tens.",
        ),
        Feature(
            "add `decimal: str = '.'`. With `decimal=','` the amount uses European notation: ',' is the "
            "decimal mark and '.' groups thousands (`'1.234,5'` -> 123450). Other values raise "
            "ValueError.",
            PARSE_CENTS_COMMA,
            (
                "parse_cents('1.234,5', decimal=',') == 123450",
                "parse_cents('(0,99)', decimal=',') == -99",
                "raises:ValueError:parse_cents('1', decimal=';')",
            ),
        ),
        "parse_cents(' (1,002.3) ')",
        imports=("import re",),
    ),
    Unit(
        "ledger",
        "money",
        "split_evenly",
        "split_evenly(total_cents, parts)",
        "It splits an amount of cents into `parts` integer shares that add up to the total and differ by at "
        "most one cent, larger shares first. `parts < 1` raises ValueError.",
        SPLIT,
        (
            "split_evenly(100, 3) == [34, 33, 33]",
            "split_evenly(10, 5) == [2, 2, 2, 2, 2]",
            "split_evenly(5, 7) == [1, 1, 1, 1, 1, 0, 0]",
            "raises:ValueError:split_evenly(10, 0)",
        ),
        Bug(
            "[base + 1 if i < extra else base for i in range(parts)]",
            "[base] * parts",
            "splitting a 100-cent bill three ways gives `[33, 33, 33]`: a cent disappears.",
        ),
        Feature(
            "add `weights: list[int] | None = None`. With weights, shares are proportional to them "
            "(integer part of total*w/sum), and the cents left over go one each to the parts with the "
            "largest fractional remainders, earlier parts first on ties. Raise ValueError unless there "
            "is "
            "one weight per part and their sum is positive.",
            SPLIT_WEIGHTS,
            (
                "split_evenly(100, 3, weights=[1, 1, 2]) == [25, 25, 50]",
                "split_evenly(10, 3, weights=[1, 1, 1]) == [4, 3, 3]",
                "split_evenly(7, 2, weights=[2, 1]) == [5, 2]",
                "raises:ValueError:split_evenly(7, 2, weights=[1])",
            ),
        ),
        "split_evenly(1001, 4)",
    ),
    Unit(
        "ledger",
        "money",
        "apply_discount",
        "apply_discount(cents, percent)",
        "It returns the price in cents after a `percent` discount (0 to 100 inclusive), with the discount "
        "rounded half up to a whole cent. Other percentages raise ValueError.",
        DISCOUNT,
        (
            "apply_discount(1000, 15) == 850",
            "apply_discount(999, 10) == 899",
            "apply_discount(250, 0) == 250",
            "apply_discount(5, 10) == 4",
            "raises:ValueError:apply_discount(100, -5)",
            "raises:ValueError:apply_discount(100, 101)",
        ),
        Bug(
            "if not 0 <= percent <= 100:",
            "if percent > 100:",
            "`apply_discount(1000, -10)` returns 1100; a negative discount should be rejected.",
        ),
        Feature(
            "add `cap_cents: int | None = None`: the discount (after rounding) is never more than "
            "`cap_cents`.",
            DISCOUNT_CAP,
            (
                "apply_discount(10000, 50, cap_cents=1500) == 8500",
                "apply_discount(1000, 10, cap_cents=500) == 900",
            ),
        ),
        "apply_discount(1999, 12.5)",
        imports=("from decimal import ROUND_HALF_UP, Decimal",),
    ),
    Unit(
        "ledger",
        "tax",
        "progressive_tax",
        "progressive_tax(income, brackets)",
        "Brackets are `(upper_limit, rate)` pairs in increasing order, the last limit may be None (no "
        "limit). Each bracket taxes only the slice of income between the previous limit and its own. "
        "The result is rounded to 2 decimals.",
        TAX,
        (
            "progressive_tax(50000, [(10000, 0.0), (40000, 0.2), (None, 0.4)]) == 10000.0",
            "progressive_tax(8000, [(10000, 0.1), (None, 0.3)]) == 800.0",
            "progressive_tax(0, [(None, 0.25)]) == 0.0",
        ),
        Bug(
            "tax += (top - lower) * rate",
            "tax += (top - lower if upper is not None else top) * rate",
            "someone earning 50000 with brackets `[(10000, 0.0), (40000, 0.2), (None, 0.4)]` is charged "
            "26000 instead of 10000: the top rate hits the whole income.",
        ),
        Feature(
            "add `deduction: float = 0.0`, subtracted from income before the brackets apply (income "
            "never goes below zero).",
            TAX_DEDUCTION,
            (
                "progressive_tax(50000, [(10000, 0.0), (None, 0.5)], deduction=20000) == 10000.0",
                "progressive_tax(1000, [(None, 0.5)], deduction=5000) == 0.0",
            ),
        ),
        "progressive_tax(72500, [(12000, 0.0), (50000, 0.25), (None, 0.45)])",
    ),
    Unit(
        "ledger",
        "tax",
        "format_cents",
        "format_cents(cents, symbol='$')",
        "It formats integer cents as money with thousands separators and two decimals: `-123450` -> "
        "`'-$1,234.50'` (the minus sign before the symbol).",
        FORMAT,
        (
            "format_cents(123450) == '$1,234.50'",
            "format_cents(-1200) == '-$12.00'",
            "format_cents(5, symbol='EUR ') == 'EUR 0.05'",
        ),
        Bug(
            'return f"{sign}{symbol}{whole:,}.{frac:02d}"',
            'return f"{symbol}{sign}{whole:,}.{frac:02d}"',
            "refunds print as `$-12.00`; finance wants `-$12.00`.",
        ),
        Feature(
            "add `accounting: bool = False`; when true, negative amounts are wrapped in parentheses "
            "instead of a minus sign (`'($12.00)'`).",
            FORMAT_ACCOUNTING,
            (
                "format_cents(-1200, accounting=True) == '($12.00)'",
                "format_cents(1200, accounting=True) == '$12.00'",
            ),
        ),
        "format_cents(-100000005)",
    ),
)
