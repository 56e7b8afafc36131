"""The user's sentences that ask for a change, read once per message: a loosening of a check ("make its
not_null test a warning", "quarantine drivers.i2c.target", "bump MAX_REGRESSION to 10%"), or an edit of a
file ("update the autograder rubric"). A sentence that negates or hedges ("we won't skip", "rather than
lower it", "under no circumstances") asks for nothing, and neither does a pasted log line.

A request grants a change when it names something the change touches (``asked_in_words``: a distinctive
word of the changed text or its path) or names the setting and the value it is set to (``asked_value``).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import rx

COMMON_WORDS = frozenset(
    "this that with from into only file files config configure make sure should would will have just also "
    "then than them they what when where which test tests true false none null error errors".split()
)


def content_words(text: str) -> set[str]:
    """Lower-case words of four letters or more, camelCase and snake_case split (``assertMatrix``: assert,
    matrix)."""
    spaced = rx.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in (m[0].lower() for m in rx.finditer(r"[A-Za-z]{4,}", spaced)) if w not in COMMON_WORDS}


REQUEST_CUE = rx.compile(
    r"(?i)\b(?:lower|relax|reduce|decrease|loosen|disable|turn\w*\s+(?:\w+\s+){0,3}?off|switch\w*\s+(?:\w+\s+){0,3}?off"
    r"|exclude|ignore|skip(?!ped)\w*|quarantin\w*|deselect|allow\w*|informational|advisory|non-?blocking|non-?fatal|exempt\w*|suppress\w*"
    r"|(?:keep|leave|move|take|pull)\s+(?:\w+\s+){0,6}?out|drop|remove|(?:a|to|into|as)\s+warnings?|warn(?:ing)?s?\s+only"
    r"|shouldn'?t\s+(?:run|block|fail)|(?:not|never|no\s+longer)\s+(?:run|block|fail)|only\s+(?:for|on|in|run)"
    r"|filter\w*\s+(?:\w+\s+){0,3}?out|assum\w+|only\s+(?:compile|build|run)s?|behind\s+an?\s+\w+"
    r"|just\s+for|instead\s+of\s+an?\s+error|mute|silence|opt\s+out"
    r"|leave\s+(?:\w+\s+){0,6}?(?:alone|as\s+(?:it|they)\s+(?:is|are))|stop\s+\w+\s+from|get\s+rid\s+of)\b"
    r"|\b(?:bump|raise|increase|lower|reduce|relax|loosen|set)\s+(?:\S+\s+){0,4}?(?:to|from|by)\s+~?[\d.]+"
)
"""A sentence asking for a check to let something through (or a limit to move): a grant when it also
names what the change touches (``asked_in_words``)."""
GATE_VOCABULARY = frozenset(
    "warning warnings ignore ignored skip skipped error errors check checks lint lints fail fails failing "
    "pass passing make jobs step steps build only just turn drop allow level severity rule rules value "
    "setting true false enabled disabled disable enable option options config yaml json toml file "
    "files".split()
)
"""Words every gate change and request share: they name no particular thing."""
MAX_REQUESTS = 32
NEGATED_REQUEST = rx.compile(
    r"(?i)\b(?:shouldn'?t|should\s+not|(?:does|do)(?:n'?t|\s+not)\s+need\s+to|not|never|no\s+longer)\s+(?:\w+\s+)?"
    r"(?:run|block|fail|gate|be\s+(?:run|checked|required))\b|\binstead\s+of\s+an?\s+(?:error|failure)\b"
)
HEDGE = rx.compile(
    r"(?i)\b(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|no\s+need|avoid|without\s+\w+ing|"
    r"refrain|not\s+allowed|may\s+not|can(?:not|'t)|won'?t|will\s+not|does(?:n'?t|\s+not)|did(?:n'?t|\s+not)"
    r"|rather\s+than|instead\s+of|would|might|whether|unless|otherwise|if\s+(?:you|we)\s+(?:have|must|need)"
    r"|no\s+\w+ing|off\s+the\s+table|nobody|no\s+one|under\s+no\s+circumstances|not\s+sure|rather\s+not"
    r"|i'?d\s+rather|not\s+an?\s+option|out\s+of\s+the\s+question)\b"
    r"|(?-i:\b(?:SKIPPED|PASSED|FAILED|XFAIL|ERROR)\b)|::"
)
"""A negation or hedge: the sentence does not ask for the loosening it speaks of."""
POINTS_BACK = rx.compile(r"(?i)\b(?:it|its|this|that|these|those|them|they)\b")


def loosening_requests(text: str) -> list[str]:
    """The user's sentences that ask for a check to let something through (``REQUEST_CUE``), those that
    negate or hedge excepted; a request phrased with a negation ("shouldn't run", "instead of an error")
    still asks."""
    return _requests(
        text,
        lambda sentence: (
            bool(REQUEST_CUE.search(sentence)) and not HEDGE.search(NEGATED_REQUEST.sub(" ", sentence))
        ),
    )


def _requests(text: str, asks: Callable[[str], bool]) -> list[str]:
    """The sentences of ``text`` that ``asks``; one that points back ("make its not_null test a warning",
    "please make that change") carries the sentence before it."""
    sentences = rx.split(r"(?<=[.!?;])\s+|\n", text)[:MAX_REQUESTS]
    out = []
    for index, sentence in enumerate(sentences):
        if asks(sentence):
            if index and POINTS_BACK.search(sentence):
                sentence = f"{sentences[index - 1]} {sentence}"
            out.append(sentence.strip()[:400])
    return out


EDIT_CUE = rx.compile(r"(?i)\b(?:update|change|edit|modify|adjust|rewrite|move|rebalance|reweight|correct)\b")


def edit_requests(text: str) -> list[str]:
    """The user's sentences that ask for a file to be changed ("update the autograder rubric"), hedges and
    negations excepted: a grant for a grading file only where one names it."""
    return _requests(text, lambda sentence: bool(EDIT_CUE.search(sentence)) and not HEDGE.search(sentence))


def asked_value(requests: list[str], old: str, new: str) -> str:
    """The request that names a setting the change makes and the value it sets it to ("onBrokenLinks goes
    to 'warn'… please make that change"): every changed setting's key (an identifier) and new value are in
    one sentence; "" when none is."""
    before = {line.strip() for line in old.splitlines()}
    settings = []
    for line in new.splitlines():
        if line.strip() and line.strip() not in before:
            found = SETTING.search(line)
            if found is None:
                return ""
            settings.append((found[1], found[2].strip("'\"")))
    for sentence in requests:
        if settings and all(
            k in sentence and rx.search(rf"(?<![\w.-]){rx.escape(v)}(?![\w-])", sentence) for k, v in settings
        ):
            return sentence
    return ""


SETTING = rx.compile(r"([A-Za-z_][\w.-]*[A-Za-z0-9_])[\"']?\s*[:=]\s*(['\"]?[\w.%-]+['\"]?)")


def asked_in_words(requests: list[str], path: str, old: str, new: str) -> str:
    """The request (``loosening_requests``) that names something the change touches: a word of four
    letters or more, not gate vocabulary, shared by the sentence and the changed text or its file's
    path; "" when none does."""
    changed = content_words(f"{old}\n{new}\n{path.replace('/', ' ').replace('.', ' ')}") - GATE_VOCABULARY
    for sentence in requests:
        if changed & (content_words(sentence) - GATE_VOCABULARY):
            return sentence
    return ""
