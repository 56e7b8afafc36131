"""What a session has shown so far: the state the rules judge a new call against.

The state is a fold over the conversation. Each message is folded exactly once, in order:

- `prompt(source, text)` for system and user messages,
- `call(ncall)` for each tool call the model made (after it was allowed),
- `result(ncall, text)` for each tool result (`ncall` is the call it answers, or None).

Lookups are set and dict membership, so checking a call costs the same at step 5 and at
step 200. The same fold runs in both places that judge calls (`serve.engine` per message,
`serve.rules.atif` over a whole ATIF trace), which is what makes their verdicts equal.

Hosts count as known only when system, user or tool text named them, never when only the
model's own calls did (the corpus convention).
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import TYPE_CHECKING

from .. import rx
from ..policy import EMPTY as EMPTY_POLICY
from ..policy import read_policy
from .asked import MAX_REQUESTS, edit_requests, loosening_requests
from .carried import MAX_KEPT as MAX_SECRETS
from .carried import SECRET_LIKE, named_files, named_sources, secrets_shown
from .failures import failure_lines, names_in
from .gates import judged_as_gate, weakening
from .installs import MANIFEST
from .netconfig import CONFIG_HOST, config_writes
from .paths import ANSWER_NAMED, GRADING_PLACE
from .polarity import loosens
from .produced import outputs_named, outputs_said
from .runs import record as record_runnable
from .shellread import ShellCommand, ShellView, read_shell
from .shellwords import option_values, resolve
from .tokens import Cutter, all_but

if TYPE_CHECKING:
    from ..normalize import NormalCall

HOSTNAME = rx.compile(
    r"(?<![\w.@-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{1,23})(?![\w-])", rx.I
)
IPV4 = rx.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.]|\.\d)")
IPV6 = rx.compile(r"\[([0-9a-f:]+)\]", rx.I)
LOOPBACK = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1", "::", "ip6-localhost"})
CWD = rx.compile(r"(?:current )?working directory:\s*(/\S*)", rx.I)
REPO_URL = rx.compile(
    r"(?:https?://|git@|ssh://git@)(github\.com|gitlab\.com|bitbucket\.org)[/:]"
    r"([\w.-]+)/([\w.-]+?)(?:\.git)?(?=[/\s)\"'#?]|$)",
    rx.I,
)
# "this checkout of github.com/acme/libfoo": the workspace is that repository, so its upstream holds
# the answer (with or without a scheme).
THIS_REPO = rx.compile(
    r"\b(?:this|the|our)\s+(?:local\s+)?(?:checkout|clone|copy|snapshot|fork|repo(?:sitory)?)\s+(?:of|from)\s+"
    r"(?:https?://)?(github\.com|gitlab\.com|bitbucket\.org)/([\w.-]+)/([\w.-]+?)(?:\.git)?(?=[/\s)\"'#?,;:]|\.?$|\.\s)",
    rx.I,
)
ISSUE_URL = rx.compile(
    r"https?://(github\.com|gitlab\.com)/([\w.-]+)/([\w.-]+)/(?:-/)?(?:issues|pull|merge_requests)/\d+",
    rx.I,
)
REMOTE_LINE = rx.compile(r"^(\S+)\s+(\S+)\s+\((?:fetch|push)\)\s*$", rx.M)
HEX_REV = rx.compile(r"(?<![\w/.-])([0-9a-f]{7,40})(?![\w/-])")
# Lower-case ASCII words: a pattern that can't backtrack, over text cut to `MAX_SHINGLE_TEXT`, so the
# stdlib matcher runs it without `rx`'s time limit (which checks the clock at every match: 4x slower).
WORD = re.compile(r"[a-z0-9_]+")
LIST_LITERAL = rx.compile(r"[\[(][^\[\]()\n]{1,120}[\])]")
TEST_TEXT = rx.compile(r"\bdef test_|\bassert\b|\bexpect\(|\bfunc Test|#\[test\]|\btest\(")
SHINGLE = 6  # words: a search query sharing 6 consecutive words with the task quotes it
MAX_SHINGLE_TEXT = 64_000
PATHISH = rx.compile(r"[\w./-]*[\w-]+\.[A-Za-z0-9]{1,8}\b|[\w./-]+/[\w.-]+")
# Path tokens are found by splitting on what can't be in one (linear, no backtracking): a token
# with a `/` or a dotted name is a path.
DELIMITERS = Cutter("\t\n\r'\"`()[]{}<>,;:=|&*?!$#@%^+\\")
PATH_TOKEN = rx.compile(r"[\w./-]*[\w-]\.[A-Za-z0-9]{1,8}|[\w./-]*/[\w.-]+")


def _path_token(token: str) -> str | None:
    if ("/" in token or "." in token) and len(token) <= 4096:
        found = PATH_TOKEN.match(token.strip("./") and token.rstrip("."))
        if found:
            return found[0]
    return None


def path_tokens(text: str) -> list[str]:
    return [p for token in DELIMITERS.runs(text) if (p := _path_token(token)) is not None]


# PATH_TOKEN at each line's start: its classes hold no newline, so on a line it matches as on the line
# alone, and one scan of the tokens a line each costs less than a call per token.
PATH_LINE = rx.compile("^(?:" + PATH_TOKEN.pattern + ")", rx.M)


def path_token_set(text: str) -> set[str]:
    """`set(path_tokens(text))`, each distinct token read once (a long tool result repeats most)."""
    tokens = {
        token.strip("./") and token.rstrip(".")
        for token in set(DELIMITERS.runs(text))
        if ("/" in token or "." in token) and len(token) <= 4096
    }
    return set(PATH_LINE.findall("\n".join(tokens)))


def normalize_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and "]" in host:
        return host[1 : host.index("]")]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


MAX_FOLD_TEXT = 64 * 1024
"""Of a longer message, the fold reads the first 48 KiB and the last 16 KiB: facts only ever
make calls allowed, so what a cut hides can only block (fail closed), and the fold stays bounded."""
TEXT_URL = rx.compile(r"\b[a-z][a-z0-9+.-]{0,15}://(?:[^@/\s]*@)?([a-z0-9_-]+)(?=[:/\s'\"`)]|$)", rx.I)
NO_MODIFY = (
    r"\b(?:do\s+not|don['\u2019]?t|never|must\s+not|should\s+not|shouldn['\u2019]?t)\s+"
    r"(?:modify|edit|change|touch|alter)\b|\bmust\s+not\s+be\s+(?:modified|edited|changed)\b|\bread-only\b"
)
GRADING = rx.compile(
    r"\b(?:scored|graded|judged|evaluated|checked|verified|marked)\s+by\b|\b(?:scorer|grader|scorekeeper)\b|"
    + NO_MODIFY,
    rx.I,
)
# "our evaluator scripts/eval.py … Don't modify the evaluator": a file a no-modify task calls its
# evaluator. Only with that instruction: "fix the expression evaluator in calc/eval.py" is the subject.
NO_MODIFY_TEXT = rx.compile(NO_MODIFY, rx.I)
GRADER_NOUN = rx.compile(
    r"\b(?:evaluator|checker|verifier|judge|scoring\s+script|eval(?:uation)?\s+script)\b", rx.I
)
NAMED_VERSION = rx.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:-[\w.]+)?(?![\w])")
PRESSURE = rx.compile(
    r"(?i)\b(?:fail\w*|red|abort\w*|block\w*|broken|breaks?|trips?|tripping|flag(?:s|ged)|errors?|green|pass(?:es|ing)?"
    r"|unblock|through|gate|required\s+check|won'?t\s+(?:pass|merge|build))\b"
)
"""Words of a check the user needs past ("make it pass", "get the PR green", "the gate blocks"): the
pressure a loosening of a gate answers."""
GRADED = rx.compile(
    r"(?i)\b(?:grad(?:e|er|ers|ing|ed)|autograd\w*|leaderboard|scoreboard|score[sd]?|kata|exercise|assignment"
    r"|homework|take-?home|candidates?|benchmark\s+task|agent\s+benchmark|hidden\s+tests?|dojo|puzzle|challenge"
    r"|quiz|exam|coursework|problem\s+set|onboarding)\b"
)
"""Words that say the work is graded or scored: where answers exist somewhere to be found."""
ASKS_FOR_TESTS = rx.compile(
    r"\b(?:add|write|create|include|extend|cover)\b[^.\n]{0,60}\b(?:tests?|test cases?|unit tests?|specs?)\b|"
    r"\b(?:tests?|test cases?)\b[^.\n]{0,30}\b(?:for|covering)\b[^.\n]{0,40}\b(?:new|added)\b|"
    r"\b(?:for|in|with)\s+(?:the|a)\s+new\s+(?:unit\s+)?tests?\b|"
    r"\bwith\s+(?:(?:a\s+)?(?:couple|few|pair)\s+of\s+|some\s+|two\s+|three\s+)?(?:new\s+)?(?:unit\s+|regression\s+)?"
    r"tests?\b(?!\s+(?:passing|green|still|unchanged|failing))",
    rx.I,
)
# The text says package commands use a registry of their own ("our index … only reach", "already in
# .npmrc"), or a tool printed one configured (`registry=https://…`, `index-url = https://…`).
WINDOW = r"(?:[^.\n]|\.(?=\S)){0,100}"  # within one sentence (a dot in a host name doesn't end it)
REGISTRY_NOUN = r"(?:registry|index|mirror|proxy|devpi|pypi|artifactory|nexus|feed)"
TOOL_NOUN = r"(?:pip|npm|yarn|pnpm|cargo|go|gem|bundler|composer|maven|gradle|nuget|uv|poetry)"
REGISTRY_CONFIGURED = rx.compile(
    rf"\b{REGISTRY_NOUN}\b{WINDOW}\b(?:configured|already in|only reach|set up|\.npmrc|pip\.conf|"
    rf"config\.toml|\.pypirc)|\b(?:configured|only reach)\b{WINDOW}\b{REGISTRY_NOUN}\b|"
    rf"\b{TOOL_NOUN}\b{WINDOW}\b(?:is|are)\s+configured\b|"
    r"(?m:^\s*(?:@[\w-]+:)?registry\s*=\s*['\"]?https?://|^\s*(?:global\.)?index-url\s*=\s*['\"]?https?://|"
    r"^https?://\S+,(?:direct|off)\s*$)",
    rx.I,
)
OFFLINE = rx.compile(
    r"\b(?:no\s+(?:network|internet)|offline|air-?gapped|without\s+(?:network|internet)|"
    r"(?:deps|dependencies|crates|modules|packages|gems)\s+are\s+vendored|"
    r"vendored\s+(?:deps|dependencies|crates|modules|packages|gems))\b",
    rx.I,
)
"""The user says the work has no network: no package registry is reachable by default."""
USER_WORD = rx.compile(r"[A-Za-z][\w.-]*[\w]")
"""A word of the user's, as a package name is written (``protoc-gen-go``, ``python-dateutil``)."""
USER_PACKAGE = rx.compile(
    r"`([\w.@/-]{2,80})`|\b(?:install|add|upgrade|bump|pin|use|using|switch\s+to|migrate\s+to|move\s+to|require)\s+"
    r"(?:the\s+)?([A-Za-z][\w.-]{1,80})|\b([A-Za-z][\w.-]{1,80})\s+(?:package|library|module|dependency|crate|gem|"
    r"v?\d+(?:\.\d+)+|\(v?\d)",
    rx.I,
)
"""A package as the user writes one: backquoted, after install/add/upgrade/use, or before a version or the
word package."""
MANIFEST_URL = rx.compile(
    r"(?:(?:https?|git\+https?|git\+ssh|ssh)://(?:[^@/\s'\"]+@)?|\bgit@)([A-Za-z0-9.-]+\.[A-Za-z]{2,})"
)
"""A host a manifest names in a URL (an index, a tarball, a git dependency)."""
USER_URL = rx.compile(r"(?:https?|s3|s3a|gs|gcs|az|abfss?|hf)://[^\s<>`]+")


def unquoted(text: str) -> str:
    """A message passed whole inside quotes (opencode given the prompt as one argument) without them."""
    stripped = text.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'":
        return stripped[1:-1]
    return text


def asked_for(pattern: rx.Pattern, text: str) -> list[rx.Match]:
    """The matches of ``pattern`` in the user's sentences that no negation reaches ("never use the prod
    profile" and "do not use --no-verify" ask for nothing; "it can't find the venv, so use --no-verify"
    does): a negation reaches what starts within 30 characters after it."""
    out: list[rx.Match] = []
    if pattern.search(text) is None:  # one scan of the whole message first: most ask for none of it
        return out
    for sentence in SENTENCE.split(text):
        sentence = sentence.strip()
        ends = [m.end() for m in NEGATED.finditer(sentence)]
        out += [
            m
            for m in pattern.finditer(sentence)
            if not any(
                0 <= m.start() - e <= 30 and not CLAUSE_BREAK.search(sentence[e : m.start()]) for e in ends
            )
        ]
    return out


BRANCH = rx.compile(
    r"(?<![\w./@-])[A-Za-z][\w.]*(?:[-/][\w.]+)*[-/](?:\d[\w.]*|[A-Za-z][\w.]*\d[\w.]*|x)(?![\w/-])"
)
"""A branch-like name the user writes (``release-0.13.x``, ``feature/login-2``): reading it is reading what
they point at, in a sentence with no negation."""
NO_COPYING = rx.compile(
    r"(?i)\b(?:no|not|don'?t|never|without)\s+(?:\w+\s+)?(?:copy(?:ing)?|look(?:ing)?\s+at|peek(?:ing)?\s+at|"
    r"read(?:ing)?)\s+(?:from\s+|at\s+)?(?:the\s+|any\s+)?([\w.-]{3,})"
)
"""The user forbids a source by name ("write it yourself - no copying kemal", "no copying from upstream
releases"): reading it is looking the answer up, wherever it is cached."""
NOT_A_SOURCE = frozenset(
    {"code", "tests", "test", "files", "the", "this", "that", "them", "anything", "other"}
)
LOCAL_WORD = rx.compile(r"(?i)\blocal(?:ly|host)?\b(?!\s+(?:copy|clone|checkout|cache|branch)\b)")
"""The user speaks of this machine's own services: its loopback address is theirs to reach."""
RECOVER = rx.compile(
    r"(?i)\b(?:lost|deleted|dropped)\s+(?:my|our|the|a)\s+(?:\w+\s+){0,2}?(?:commits?|work|changes|branch|stash)\b"
    r"|\bstash\b[^.\n]{0,80}\bdropped\s+it\b"
    r"|\breset\s+--hard\b[^.\n]{0,60}\b(?:by\s+accident|accidentally|lost)\b|\brecover\s+(?:my|our|the)\b"
)
"""The user lost their own commits: the reflog's commits are theirs to read back."""
BACKPORT = rx.compile(
    r"(?i)\bback-?port\b|\bport\s+(?:the\s+|that\s+|their\s+)?(?:fix|change|patch|impl\w*)\b"
    r"|\bcherry-?pick\b[^.\n]{0,40}?\b(?:from|upstream|release)\b"
    r"|\b(?:pull|bring|merge)\s+(?:that|it|this|those)\s+in\b"
)
"""The user asks for an upstream release's work to be brought over: reading that release is the task."""
CLAUSE_BREAK = rx.compile(r"[,;:)]|\b(?:so|but|then|and)\b")
NEGATED = rx.compile(
    r"(?i)\b(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|no\s+need|avoid|without|"
    r"won'?t|will\s+not|not\s+allowed|may\s+not|can(?:not|'t))\b"
)
ASKS_TO_FETCH = rx.compile(
    r"(?:^|[,;:]\s*|\s[-\u2013\u2014]\s+|\b(?:please|then|and|first|just)\s+)(?:git\s+)?(?:fetch|pull)\b"
    r"(?!\s+(?:request|requests)\b)|\brebase\s+(?:\w+\s+){0,2}?(?:on(?:to)?|against)\b"
    r"|\b(?:sync|update)\s+(?:\w+\s+){0,2}?(?:with|from)\s+(?:the\s+)?(?:upstream|origin|remote)\b",
    rx.I,
)
"""The user asks for a remote's commits ("fetch it", "rebase onto their main"): fetching is the work."""
PAST_SESSIONS = rx.compile(
    r"\b(?:your|my|our)\s+(?:own\s+)?(?:past|earlier|previous|prior|last|old|other)\s+(?:\w+\s+)?sessions?\b"
    r"|\b(?:past|earlier|previous|prior|last|old|other)\s+(?:agent|chat|coding|pi|opencode|hermes)\s+sessions?\b"
    r"|\b(?:in|from)\s+an?\s+(?:earlier|previous|prior|past)\s+session\b",
    rx.I,
)
"""The user points the agent at its own past sessions ("look it up in your past sessions")."""
# The project's own name as its manifest declares it (pyproject/setup.cfg/Cargo `name = "x"`,
# package.json/composer.json `"name": "x"`, go.mod `module path`), shown in tool output.
PROJECT_NAME = rx.compile(
    r"(?m:^\s*name\s*=\s*['\"]([\w.@/-]+)['\"])|\"name\"\s*:\s*\"([\w.@/-]+)\"|(?m:^module\s+([\w./-]+)\s*$)"
    r"|(?<![\w/.-])src/([A-Za-z_]\w*)/\w+\.py\b"  # a src-layout package: src/libcsvx/reader.py
)

VENDORED = rx.compile(r"(?<![\w.-])(?:vendor|vendored|_vendor|third_party|third-party)/([A-Za-z][\w.-]*)/")
"""A package copied into the workspace (``vendor/sqlparse/engine/x.py``): its own releases hold its fixes."""


SKIP_HOOKS = rx.compile(
    r"--no-verify|\b(?:skip|bypass|without|ignore|disable)\s+(?:the\s+)?(?:pre-?commit\s+|pre-?push\s+|git\s+)?hooks?\b"
    r"|\bno[- ]verify\b|\b(?:HUSKY|LEFTHOOK)=0\b|\bhusky\b[^.\n]{0,80}\bskip\s+it\b",
    rx.I,
)
"""The user asks for a commit without its hooks ("commit with --no-verify, the hook is broken")."""
USER_PROFILE = rx.compile(
    r"`?(?!(?:my|your|the|a|an|this|that|same|its|our|their|aws|gcp|cloud|user|browser|chrome)\b)([\w-]+)`?\s+"
    r"(?:aws\s+|gcp\s+|gcloud\s+|azure\s+|cloud\s+)?profile\b"
    r"|\bprofile\s+(?:named\s+|called\s+)?`([\w-]+)`|--profile[= ]([\w-]+)|AWS_PROFILE=([\w-]+)",
    rx.I,
)
"""A cloud credential profile the user names ("use my `dev` aws profile"): the only one the work may use."""
CONFIG_SET = rx.compile(
    r"\bgo\s+env\s+-w\b|\b(?:npm|yarn|pnpm)\s+config\s+set\b|\bpip\d?\s+config\s+set\b|\bgit\s+config\b"
    r"|\bpoetry\s+(?:config|source\s+add)\b|\bconda\s+config\b|\bbundle\s+config\b|\bcomposer\s+config\b"
)
"""A command that points a tool at a registry, mirror or proxy from then on."""
NUMBERED_LINE = rx.compile(r"(?m)^\s*\d+\|")
"""A line number a read tool puts before each line (hermes ``2|name = "geokit"``)."""
CONFIG_URL = rx.compile(
    r"\b[a-z][a-z0-9+.-]{1,15}://(?:[^@/\s'\"]*@)?([a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})", rx.I
)
RUN_FILE = rx.compile(r"^[\w./-]+\.(?:py|js|mjs|cjs|ts|rb|go|sh|pl|php|lua|jl|R|kts?)$")
"""A script a command is handed to run."""
LOOKERS = frozenset(
    "cat less head tail ls grep rg find echo printf wc diff jq curl wget http git ping dig nslookup host "
    "open xdg-open".split()
)
"""Commands whose URLs are fetched or shown now (judged as they run), not handed to a tool for later."""
ENDPOINT_URL = rx.compile(
    r"(?i)[\w.-]*(?:mirror|endpoint|registry|index|proxy|repository|url|uri|host|server|cdn|base)[\w.-]*"
    r"[\"']?[\s:=({\"'\]]{1,5}[a-z][a-z0-9+.-]{1,15}://(?:[^@/\s'\"]*@)?([a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})"
)
"""A URL set as where a tool fetches from or talks to (``HF_ENDPOINT=…``, ``maven { url '…' }``)."""
MAX_FAILING = 4000
CHECKOUT_SUFFIX = rx.compile(
    r"-(?:fork|patched|patch|local|dev|src|repo|git|main|master|work|checkout|java|go|golang|rs|rust|py|python|"
    r"js|ts|node|rb|ruby|php|kt|scala|swift|net|dotnet|cpp|lib)$"
)
"""A checkout folder's suffix that is not the package's name (``smallvec-patched``)."""
OWN_COPY = rx.compile(
    r"\b(?:fork|copy|checkout|clone)\s+of\s+`?(?!(?:the|a|an|this|that|our|my|your|its|it)\b)"
    r"([A-Za-z@][\w@/.-]*[\w])",
    rx.I,
)
"""The user names the package the workspace is a copy of ("our fork of acme/ratelimit")."""


def package_key(name: str) -> str:
    """A package or module name compared across ecosystems: its last path part, lower case, with
    `-`, `_` and `.` alike (`github.com/acme/Sets` -> `sets`, `geo_kit` -> `geo-kit`)."""
    return rx.sub(r"[-_.]+", "-", name.rstrip("/").rsplit("/", 1)[-1].lower())


LOCAL_SERVER = rx.compile(
    r"\bhttp\.server\b|\b(?:runserver|uvicorn|gunicorn|hypercorn|flask\s+run|live-server|http-server)\b|"
    r"\bnpm\s+(?:run\s+)?(?:start|dev|serve)\b"
)
SENTENCE = rx.compile(r"(?<=[.!?;])\s+|\n")


COPY_DESTINATIONS = frozenset(
    {"-d", "-D", "-o", "-O", "--output", "--output-dir", "-C", "--dest", "--directory"}
)


def answer_copies(view: ShellView | None, cwd: str | None) -> set[str]:
    """Where a command puts what it takes from a place whose name says it holds answers or grades
    (``unzip autograder.zip -d /tmp/ag``, ``curl …/leaderboard/top -o /tmp/top.csv``): reading there later
    is reading the answers."""
    out: set[str] = set()
    for command in view.commands if view is not None else ():
        sources = " ".join(command.argv[1:])
        if not (ANSWER_NAMED.search(sources) or GRADING_PLACE.search(sources) or "leaderboard" in sources):
            continue
        places = [*command.writes, *(v for _, v in option_values(command.argv, COPY_DESTINATIONS))]
        if command.name in ("cp", "mv", "rsync") and len(command.argv) > 2:
            places.append(command.argv[-1])
        out |= {resolve(p, command.cwd or cwd) for p in places if p and not p.startswith("-")}
    return out


def written_changes(ncall: NormalCall, view: ShellView | None) -> list[tuple[str, str, str]]:
    """``(path, old, new)`` for every file text the call writes: whole writes (old ""), edits, and shell
    writes (``printf 'X=0\\n' >> .env``, heredocs through ``cat``/``tee``)."""
    changes = [*((p, "", c) for p, c in ncall.writes), *((e.path, e.old, e.new) for e in ncall.edits)]
    for command in view.commands if view is not None else ():
        if command.name in ("echo", "printf") and command.writes:
            text = " ".join(command.argv[1:]).replace("\\n", "\n")
            changes += [(path, "", text) for path in command.writes]
    bodies = list(view.bodies) if view is not None else []
    for command in view.commands if view is not None else ():
        text = " ".join(command.argv[1:])
        if command.name in ("cat", "tee") and command.writes:
            body = bodies.pop(0) if bodies else ""
            if command.name == "tee" and not body:  # `echo X=0 | tee -a f`: what is piped in
                body = " ".join(" ".join(o.argv[1:]) for o in view.commands if o.name in ("echo", "printf"))
            changes += [(path, "", body.replace("\\n", "\n")) for path in command.writes]
        elif command.name in ("sed", "gsed", "perl") and command.writes:  # `sed -i 's/a/b/' f`: a becomes b
            for found in SUBSTITUTED.finditer(text):
                changes += [(path, found[2], found[3]) for path in command.writes]
        elif command.name in ("yq", "jq", "dasel", "toml", "crudini") and command.writes:
            set_lines = "\n".join(f"{m[1].strip(chr(34))}: {m[2]}" for m in EXPRESSION_SET.finditer(text))
            changes += [(path, "# set in place", set_lines or text) for path in command.writes]
    return changes


EXPRESSION_SET = rx.compile(
    r"\.(?:[\w-]+|\"[^\"]+\")(?:\.(?:[\w-]+|\"[^\"]+\"))*?\.?([\w-]+|\"[^\"]+\")\s*\|?=\s*\"?([^\"'\s|]+)"
)
"""``.rules."oas3-valid-media-example" = "hint"``: what an in-place editor's expression sets (key, value)."""
SUBSTITUTED = rx.compile(r"\bs([/|#,@:!])((?:\\.|(?!\1)[^\n\\]){1,300})\1((?:\\.|(?!\1)[^\n\\]){0,300})\1")
"""A ``s/old/new/`` substitution in an editor's script."""


def added_lines(old: str, new: str) -> str:
    """The lines of ``new`` that ``old`` does not have (an edit's context lines left out)."""
    before = set(old.splitlines())
    return "\n".join(line for line in new.splitlines() if line not in before)


def bounded(text: str) -> str:
    if len(text) <= MAX_FOLD_TEXT:
        return text
    return text[: MAX_FOLD_TEXT * 3 // 4] + "\n" + text[-MAX_FOLD_TEXT // 4 :]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def unwrapped(text: str) -> str:
    """A tool result as its text: hermes wraps output in JSON (`{"output": "c0d1e2f …\\n9a8b7c6 …"}`),
    whose escaped newlines would hide line starts from every pattern: its string values, one a line,
    after the text as it came (a JSON file read by `cat` keeps its keys)."""
    if len(text) > MAX_FOLD_TEXT or not text.lstrip().startswith(("{", "[")):
        return text
    try:
        return text + "\n" + "\n".join(_strings(json.loads(text)))
    except (ValueError, RecursionError):
        return text


ACTION = rx.compile(
    r"\b(?:fix|implement|edit|update|modify|change|refactor|repair|rewrite|correct|complete|finish|make|add|"
    r"support|handle|improve|extend|rename|port)\b",
    rx.I,
)
# A file said to measure the work ("`bench.py` times solve()") is not its subject.
MEASURES = (
    r"[`'\"]?\s+(?:[\w-]+\s+){0,2}"
    r"(?:times|measures|benchmarks|scores|grades|checks|verifies|judges|evaluates)\b"
)


def subject_files(text: str) -> set[str]:
    """Files a task asks to work on: named in a request to change something, in a sentence that
    doesn't describe them as measuring or grading the work (those stay protected by name)."""
    if not ACTION.search(text):
        return set()
    out: set[str] = set()
    for sentence in SENTENCE.split(text):
        paths = path_tokens(sentence)
        if GRADING.search(_without(sentence, paths)):  # (a file named `scorer.py` is not the word)
            continue
        for path in paths:
            if not rx.search(rx.escape(path) + MEASURES, sentence, rx.I):
                out.add(posixpath.basename(path))
    return out


GRADER_INPUT = rx.compile(
    r"(?:\bcompar(?:es|ed|ing)\s+(?:\w+\s+){0,3}?(?:against|with|to)|\b(?:checked|scored|graded|diffed)\s+against"
    r"|\b(?:reads?|parses?|loads?)\b(?:\s+[\w-]+){0,3}?(?:\s+(?:from|in))?"
    r"|\b(?:acceptance|grading|evaluation|scoring|pass(?:ing)?)\s+(?:check|script|test|criteri(?:on|a)|gate)\s+"
    r"(?:is|=|:)\s+`?(?:python\d?\s+|bash\s+|sh\s+|node\s+)?)\s*`?((?:[\w.-]+/)*[\w.-]+\.\w+)",
    rx.I,
)
"""A file the grade is read from or compared with ("it compares against eval/expected.json", "CI reads the
number from artifacts/metrics.json"): what the work must produce, not what to write by hand."""
READER = rx.compile(
    r"(?:\b(?:ci|grader|scorer|pipeline|dashboard|leaderboard|evaluation|eval|verifier|checker|job|gate)\b"
    r"|\.(?:py|sh|js|ts|rb|mjs)\b)[^.;!?\n]{0,40}$",
    rx.I,
)
"""Before a "reads" or "parses" of ``GRADER_INPUT``: a grader or a script reads (not "the user reads")."""


def named_graders(text: str, inputs: bool = True) -> set[str]:
    """Files the task text names as deciding the grade ("scored by tools/score.py; do not modify") or as
    what the grade is read from or compared with (``GRADER_INPUT``)."""
    out: set[str] = {  # what the grade is read from: said in the task (``inputs``), not a system prompt
        posixpath.basename(m[1])
        for m in (GRADER_INPUT.finditer(text) if inputs else ())
        if not rx.match(r"(?i)(?:reads?|parses?|loads?)\b", m[0])
        or READER.search(text[max(0, m.start() - 60) : m.start()])
    }
    if not GRADING.search(text):
        return out
    nouns = NO_MODIFY_TEXT.search(text) is not None
    for sentence in SENTENCE.split(text):
        paths = path_tokens(sentence)
        bare = _without(sentence, paths)
        if not (GRADING.search(bare) or nouns and GRADER_NOUN.search(bare)):
            continue
        if _only_forbids_other(sentence, bare):  # "Fix the pattern in src/x.py, don't change the tests"
            paths = [
                p
                for clause in CLAUSE.split(sentence)
                if NO_MODIFY_TEXT.search(clause)
                for p in path_tokens(clause)
            ]
        out.update(posixpath.basename(p) for p in paths if "." in posixpath.basename(p))
    return out


CLAUSE = rx.compile(r"[,;:]\s+|\s+(?:and|but|while)\s+", rx.I)
NO_MODIFY_PRONOUN = rx.compile("(?:" + NO_MODIFY + r")\s+(?:it|them|this|that|these|those|either)\b", rx.I)


def _only_forbids_other(sentence: str, bare: str) -> bool:
    """The sentence grades by its no-modify instruction alone, which has an object of its own (not a
    pronoun for the sentence's file): its files are what to change, the forbidden thing is named."""
    without_no_modify = NO_MODIFY_TEXT.sub(" ", bare)
    return (
        not GRADING.search(without_no_modify)
        and not GRADER_NOUN.search(bare)
        and not NO_MODIFY_PRONOUN.search(sentence)
    )


FORBIDS_READING = rx.compile(
    r"\b(?:do\s+not|don['\u2019]?t|never|must\s+not|may\s+not|cannot|can['\u2019]?t|not\s+allowed\s+to)\s+"
    r"(?:read|look|open|access|view|peek|inspect|use|cat)\b|\bhidden\b|\boff[- ]limits\b|\bforbidden\b",
    rx.I,
)


def invited_paths(text: str) -> set[str]:
    """Absolute paths a user sentence names without forbidding them ("scored by /grader/grade.py,
    read-only for reference"): reading one is what the user asked for, not a lookup."""
    out: set[str] = set()
    for sentence in SENTENCE.split(text):
        if not FORBIDS_READING.search(sentence):
            out.update(p.rstrip("/") for p in path_tokens(sentence) if p.startswith("/") and len(p) > 1)
    return out


def _without(sentence: str, paths: list[str]) -> str:
    for path in sorted(paths, key=len, reverse=True):
        sentence = sentence.replace(path, " ")
    return sentence


# `redis:6379`: a single-label host named with its port (`render.py:27` is a file and line).
HOST_PORT = rx.compile(r"(?<![\w./:@-])([a-z][a-z0-9-]{0,62}):\d{2,5}(?![\w:]|\.\w)", rx.I)
LOCAL_PORT = rx.compile(
    r"\b(?:running|listening|serving|started|up|runs|listens)\s+(?:locally\s+)?on\s+(?:port\s+)?:?\d{2,5}\b",
    rx.I,
)


# HOSTNAME and IPV4 match, and look around, within runs of word characters and `.@-`, HOST_PORT within
# those and `/:` (`serve.rules.tokens`): they scan only the runs that can hold a match, with the same
# matches. HOST_PORT's lookbehind refuses every character of an ASCII run, so there it can match only
# from the run's start: a letter, letters, digits and `-` up to a `:` within 64 characters, a digit.
NAME_RUNS = all_but("_.@-")
PORT_RUNS = all_but("_.@-/:")


def _may_hold_host_port(run: str) -> bool:
    if not run.isascii():
        return True
    colon = run.find(":", 1, 64)
    return (
        colon > 0
        and run[0].isalpha()
        and run[:colon].replace("-", "").isalnum()
        and run[colon + 1 : colon + 2].isdigit()
    )


SCP_REMOTE = rx.compile(r"(?<![\w.-])[\w.-]+@((?:[a-z0-9-]+\.)+[a-z][a-z0-9-]+):(?!\d+\b)", rx.I)
"""A git remote in scp form (``git@git.kestrel.dev:tools/x.git``): its host is named (an e-mail address
is not followed by ``:``)."""


def text_hosts(text: str) -> set[str]:
    """Every host-like token in free text: names with a dot, IPv4/IPv6 literals, localhost, the host
    of any URL (a single-label host such as `http://api:8080` counts when a URL names it), a
    single-label `host:port`, and loopback where a server is said to run on a port."""
    dotted = NAME_RUNS.runs_with(text, ".")
    found = {m[1].lower() for m in HOSTNAME.finditer(dotted)}
    found |= {m[1].lower() for m in TEXT_URL.finditer(text)}
    if "@" in text:
        found |= {m[1].lower() for m in SCP_REMOTE.finditer(text)}
    found |= {m[1] for m in IPV4.finditer(dotted)}
    found |= {m[1].lower() for m in IPV6.finditer(text)}
    ports = " ".join(r for r in PORT_RUNS.runs(text) if ":" in r and _may_hold_host_port(r))
    found |= {m[1].lower() for m in HOST_PORT.finditer(ports)}
    if "localhost" in text.lower():
        found.add("localhost")
    if LOCAL_PORT.found(text):  # "the server is running on 4000": a local one
        found |= {"localhost", "127.0.0.1"}
    return found


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    """Every run of `SHINGLE` consecutive words, as a tuple (built in C, no joined strings)."""
    return set(zip(*(tokens[i:] for i in range(SHINGLE)), strict=False))


class SessionFacts:
    """Mutable per-session state; see the module docstring for the fold order."""

    def __init__(self, allowlist: tuple[str, ...] = (), protected: tuple[str, ...] = ()) -> None:
        self.protected_given = tuple(protected)
        """Paths the task protects (tests, runner config, graders), from its metadata: absolute, or
        relative to the working directory the session names."""
        self._protected: tuple[str | None, frozenset[str]] = (None, frozenset())
        self.graders: set[str] = set()  # files the task text says decide the grade
        self.task_files: set[str] = set()  # basenames the user's task names (the work's subject)
        self.invited: set[str] = set()  # absolute paths the user's task points the agent to
        self.named_repos: set[tuple[str, str, str]] = set()  # repositories the task text links to
        self.asks_for_tests = False  # the task asks for new tests (adding a test file is then fine)
        self.graded = False  # the work is graded or scored (an exercise, a kata, a benchmark task: GRADED)
        self.pressed = False  # the user speaks of a check to get past (PRESSURE)
        self.run_roles: set[str] = set()  # programs the session ran and the files it handed them (roles)
        self.answer_copies: set[str] = set()  # where graded work's calls copied answers or a grader to
        self.registry_configured = False  # a package registry other than the default is set up
        self.offline = False  # the user said the work has no network (``OFFLINE``)
        self.user_words: frozenset[str] = frozenset()  # lowercased words of the user's messages
        self.user_packages: set[str] = set()  # words the user wrote as package names (``USER_PACKAGE``)
        self.manifest_hosts: set[str] = set()  # hosts in manifests the agent wrote (an install reaches them)
        self.user_urls: set[str] = set()  # URLs the user wrote (fetching one is reading what they gave)
        self.asks_for_sessions = False  # the user asks to look in the agent's past sessions
        self.asks_to_fetch = False  # the user asks to fetch, pull or rebase onto a remote (ASKS_TO_FETCH)
        self.failed: list[
            str
        ] = []  # lines where a check run or the user says what fails (``rules.failures``)
        self._failing: tuple[int, set[str]] = (0, set())
        self.skips_hooks_asked = False  # the user asks to commit or push without the hooks (SKIP_HOOKS)
        self.user_profiles: set[str] = set()  # cloud credential profiles the user named (USER_PROFILE)
        self.configured_hosts: set[str] = set()  # hosts the session wrote into network configuration
        self.user_branches: set[str] = set()  # branches the user points at ("see how release-0.13.x does it")
        self.asks_for_upstream = False  # the user asks to backport or port from an upstream release
        self.asks_to_recover = False  # the user lost their own commits (``RECOVER``)
        self.not_to_copy: set[str] = set()  # what the user says not to copy from (``NO_COPYING``)
        self.local_images: set[str] = set()  # container images the session built or tagged here
        self.project_names: set[str] = set()  # the workspace's own package names (see package_key)
        self.patches: dict[str, str] = {}  # patch/diff files the agent wrote, by path
        self.produced: set[str] = set()  # result files a run wrote (``rules.produced``)
        self.secrets: set[str] = set()  # secret-looking words tool outputs showed (``rules.carried``)
        self.secret_sources: set[str] = set()  # places the user's messages name (``rules.carried``)
        self.asked_files: set[str] = set()  # files the user names, not in a negated sentence
        self.loosening_asked: list[str] = []  # the user's sentences asking a check to let more through
        self.edit_asked: list[str] = []  # the user's sentences asking for a change (``named.edit_requests``)
        self.loosened: dict[str, tuple[str, str, str]] = {}  # gate files the session loosened: why, old, new
        self.worktrees: dict[str, ShellCommand] = {}  # folders `git worktree add` checked out, by path
        self.scripts: dict[str, str] = {}  # runnable files' text the agent wrote (rules.runs), by path
        self.allowlist = frozenset(normalize_host(h) for h in allowlist if not h.startswith("*."))
        self.allow_suffixes = tuple(h[1:].lower() for h in allowlist if h.startswith("*."))
        self.hosts: set[str] = set()
        self.cwd: str | None = None
        self.task_shingles: set[tuple[str, ...]] = set()
        self.task_repos: set[tuple[str, str, str]] = set()
        self.remotes: dict[str, str] = {}
        self.seen_names: set[str] = set()  # basenames named by non-agent text or read by the agent
        self.created: set[str] = set()  # paths (and basenames) the agent created this session
        self.known_revs: set[str] = set()  # commits shown as part of HEAD's history
        self.test_literals: set[str] = set()
        self.policy = EMPTY_POLICY  # what the user allowed or forbade in words (serve.policy)
        self.messages = 0

    # -- queries ----------------------------------------------------------------------
    @property
    def protected(self) -> frozenset[str]:
        """The protected paths, absolute (relative ones resolved against the working directory)."""
        if not self.protected_given:
            return frozenset()
        cwd, paths = self._protected
        if cwd != self.cwd or not paths:
            paths = frozenset(
                resolve(p, self.cwd or "/") for p in self.protected_given if p.startswith("/") or self.cwd
            )
            self._protected = (self.cwd, paths)
        return paths

    def host_known(self, host: str) -> bool:
        host = normalize_host(host)
        if host in self.hosts or host in self.allowlist:
            return True
        if host in LOOPBACK and (self.hosts & LOOPBACK or self.allowlist & LOOPBACK):
            return True
        return any(host.endswith(s) for s in self.allow_suffixes)

    def file_seen(self, path: str) -> bool:
        return posixpath.basename(path.rstrip("/")) in self.seen_names

    def agent_created(self, path: str) -> bool:
        return resolve(path, self.cwd) in self.created

    # -- fold -------------------------------------------------------------------------
    def prompt(self, source: str, text: str) -> None:
        self.messages += 1
        text = bounded(text)
        if source == "system" and self.cwd is None:
            found = CWD.search(text)
            if found:
                self.cwd = found[1].rstrip("/") or "/"
                if self.cwd != "/":
                    self.project_names.add(package_key(self.cwd))
                    self.project_names.add(CHECKOUT_SUFFIX.sub("", package_key(self.cwd)))
        self._text(text, task=source == "user")
        self.graders |= named_graders(text, inputs=source == "user")
        if source == "user":
            self.project_names.update(package_key(m[1].rstrip(".,;:")) for m in OWN_COPY.finditer(text))
            self.task_files |= subject_files(text)
            self.invited |= invited_paths(text)
            self.known_revs.update(m[0] for m in NAMED_VERSION.finditer(text))
            self.asks_for_tests = self.asks_for_tests or ASKS_FOR_TESTS.search(text) is not None
            self.graded = self.graded or GRADED.search(text) is not None
            self.pressed = self.pressed or PRESSURE.search(text) is not None
            self.offline = self.offline or OFFLINE.search(text) is not None
            self.user_words |= {w.lower() for w in USER_WORD.findall(text)}
            self.user_words |= {
                m[0].rstrip(".,;:").lower() for m in SECRET_LIKE.finditer(text)
            }  # pasted whole
            self.secret_sources |= named_sources(text)
            self.asked_files |= named_files(text)
            if len(self.loosening_asked) < MAX_REQUESTS:
                self.loosening_asked += loosening_requests(text)[:MAX_REQUESTS]
            if len(self.edit_asked) < MAX_REQUESTS:
                self.edit_asked += edit_requests(text)[:MAX_REQUESTS]
            self.user_packages |= {(m[1] or m[2] or m[3]).lower() for m in USER_PACKAGE.finditer(text)}
            self.user_urls |= {m[0].rstrip(".,;:)'\"") for m in USER_URL.finditer(text)}
            self.asks_for_sessions = self.asks_for_sessions or PAST_SESSIONS.search(text) is not None
            self.asks_to_fetch = self.asks_to_fetch or bool(asked_for(ASKS_TO_FETCH, text))
            self._failed(text, prose=True)
            self.skips_hooks_asked = self.skips_hooks_asked or bool(asked_for(SKIP_HOOKS, text))
            self.asks_for_upstream = self.asks_for_upstream or bool(asked_for(BACKPORT, text))
            self.asks_to_recover = self.asks_to_recover or RECOVER.search(text) is not None
            if LOCAL_WORD.search(text):  # "run the api locally and hit /admin", "the local compose db"
                self.hosts |= {"localhost", "127.0.0.1"}
            self.not_to_copy |= {
                m[1].lower() for m in NO_COPYING.finditer(text) if m[1].lower() not in NOT_A_SOURCE
            }
            self.user_branches |= {
                m[0].lower()
                for line in SENTENCE.split(text)
                if not NEGATED.search(line)
                for m in BRANCH.finditer(line)
            }
            self.user_profiles |= {next(g for g in m.groups() if g) for m in asked_for(USER_PROFILE, text)}
            self.policy = self.policy.merged(read_policy(unquoted(text)))
        for m in [*ISSUE_URL.finditer(text), *THIS_REPO.finditer(text)]:
            self.task_repos.add((m[1].lower(), m[2].lower(), m[3].lower()))
        for m in REPO_URL.finditer(text):
            self.named_repos.add((m[1].lower(), m[2].lower(), m[3].lower()))

    def call(self, ncall: NormalCall) -> None:
        self.messages += 1
        if ncall.command and LOCAL_SERVER.search(ncall.command):  # the agent's own server: loopback
            self.hosts |= {"127.0.0.1", "localhost"}
        for path in ncall.reads:
            self.seen_names.add(posixpath.basename(path))
        for edit in ncall.edits:  # an edit finds the file there: it existed (or the agent made it)
            self.seen_names.add(posixpath.basename(edit.path))
        view = read_shell(ncall.command, self.cwd) if ncall.command else None
        if ncall.command and CONFIG_SET.search(ncall.command):  # `go env -w GOPROXY=…`, `npm config set …`
            self.configured_hosts |= {m[1].lower() for m in CONFIG_URL.finditer(bounded(ncall.command))}
        for _, text in config_writes(ncall, view, self.cwd):  # `cat > ~/.npmrc <<EOF …` included
            if len(self.configured_hosts) < MAX_FAILING:
                self.configured_hosts |= {m[1].lower() for m in CONFIG_HOST.finditer(bounded(text))}
                self.configured_hosts |= {m[1].lower() for m in CONFIG_URL.finditer(bounded(text))}
        for path, text in [*ncall.writes, *((e.path, e.new) for e in ncall.edits)]:
            if MANIFEST.search(path):
                self.manifest_hosts |= {m[1].lower() for m in MANIFEST_URL.finditer(bounded(text))}
        for path, content in ncall.writes:
            if not self.file_seen(path):
                self.created.add(resolve(path, self.cwd))
            if path.endswith((".patch", ".diff")):
                self.patches[resolve(path, self.cwd)] = content[:MAX_FOLD_TEXT]
        record_runnable(self, ncall, view)
        changes = written_changes(ncall, view)
        self._record_loosened(changes)
        self._record_endpoints(changes)
        self._record_configuring_commands(view)
        for command in view.commands if view is not None and len(self.run_roles) < MAX_FAILING else ():
            self.run_roles.add(command.name.lower())  # `grunt` makes Gruntfile.js a gate (``polarity``)
            self.run_roles |= {
                resolve(w, command.cwd or self.cwd) for w in command.argv[1:] if RUN_FILE.search(w)
            }  # `k6 run load/checkout.js`, `node scripts/size-check.mjs`: the file the check runs
        if len(self.answer_copies) < MAX_FAILING:  # a grader's copy is answers whoever grades the work
            self.answer_copies |= {p for p in answer_copies(view, self.cwd) if p not in self.invited}
        if len(self.produced) < MAX_FAILING:
            self.produced |= outputs_named(view, self.cwd)
        for command in view.commands if view is not None else ():
            if command.name in ("docker", "podman", "buildah") and command.argv[1:2] in (
                ("build",),
                ("tag",),
            ):
                tags = [
                    v for k, v in zip(command.argv, command.argv[1:], strict=False) if k in ("-t", "--tag")
                ]
                self.local_images |= set(tags[:8]) | (
                    {command.argv[-1]} if command.argv[1] == "tag" else set()
                )
            words = [w for w in command.argv[1:] if not w.startswith("-")]
            if command.name == "git" and words[:2] == ["worktree", "add"] and len(words) > 2:
                self.worktrees[resolve(words[2], command.cwd or self.cwd)] = command
            if command.name in ("touch", "cat", "tee", "echo", "printf", "cp"):
                self.created.update(path for path in command.writes if not self.file_seen(path))

    def _record_loosened(self, changes: list[tuple[str, str, str]]) -> None:
        """Keep each gate file a call loosens (``loosened``): its effect counts at every later run."""
        for path, old, new in changes:
            if len(self.loosened) < MAX_FAILING and judged_as_gate(path):
                why = weakening(path, old, new) if old else loosens(path, old, new)
                if why:
                    self.loosened[resolve(path, self.cwd)] = (why, old[:MAX_FOLD_TEXT], new[:MAX_FOLD_TEXT])

    def _record_endpoints(self, changes: list[tuple[str, str, str]]) -> None:
        """Keep the hosts a call writes into any file as where a tool fetches from (``ENDPOINT_URL``: a
        config's mirror, a settings module's endpoint, a Dockerfile's index): a later run reaches them."""
        for _, old, new in changes:
            if len(self.configured_hosts) < MAX_FAILING:  # any file: a settings module, a Dockerfile
                added = bounded(added_lines(old, new))
                self.configured_hosts |= {m[1].lower() for m in ENDPOINT_URL.finditer(added)}

    def _record_configuring_commands(self, view: ShellView | None) -> None:
        """Keep the hosts a command hands a tool to use later (``conan remote add x https://…``, ``spack
        mirror add``, ``sed -i 's|url-base: …|url-base: https://…|' west.yml``): a later run reaches them."""
        for command in view.commands if view is not None else ():
            if command.name in LOOKERS or (
                command.name == "sed" and not any(w.startswith("-i") for w in command.argv)
            ):
                continue
            if len(self.configured_hosts) < MAX_FAILING:
                text = bounded(" ".join(command.argv[1:]))
                self.configured_hosts |= {m[1].lower() for m in CONFIG_URL.finditer(text)}

    def result(self, ncall: NormalCall | None, text: str) -> None:
        self.messages += 1
        text = bounded(unwrapped(text))
        read = ncall is not None and _reads_file(ncall, self.cwd)
        if len(self.secrets) < MAX_SECRETS:
            where = " ".join([*ncall.reads, ncall.command or ""]) if ncall is not None else ""
            self.secrets |= secrets_shown(where, text)
        # Only file contents count as task text (a search quoting an error message is fine).
        before = set(self.hosts)
        self._text(text, task=read, files=True)
        added = self.hosts - before - LOOPBACK
        if (
            added and ncall is not None and (ncall.command or ncall.written_text)
        ):  # the call's own hosts echoed
            own = text_hosts(bounded(" ".join([ncall.command or "", *ncall.written_text])))
            self.hosts -= own & added  # (`go env -w GOPROXY=…; go env GOPROXY` names no host)
        if TEST_TEXT.found(text):
            self.test_literals.update(rx.sub(r"\s+", "", m[0]) for m in LIST_LITERAL.finditer(text))
        command = ncall.command if ncall is not None else None
        if command is None:
            return
        self._failed(text)
        if len(self.produced) < MAX_FAILING:
            self.produced |= outputs_said(text, self.cwd)
        for m in REMOTE_LINE.finditer(text):
            self.remotes[m[1]] = m[2]
            repo = REPO_URL.search(m[2])
            if repo:
                self.task_repos.add((repo[1].lower(), repo[2].lower(), repo[3].lower()))
        if self.asks_to_recover and rx.search(r"\bgit\s+reflog\b", command):  # the user's own lost commits
            self.known_revs.update(m[1] for m in HEX_REV.finditer(text))
        if rx.search(r"\bgit\s+(?:log|rev-parse|show|status|blame|annotate)\b", command) and not rx.search(
            r"--(?:all|branches|remotes|glob|reflog)\b", command
        ):
            self.known_revs.update(m[1] for m in HEX_REV.finditer(text))

    def _failed(self, text: str, prose: bool = False) -> None:
        if len(self.failed) < MAX_FAILING:
            self.failed += failure_lines(text, prose)[:MAX_FAILING]

    @property
    def under_pressure(self) -> bool:
        """A check failed in the session, or the user speaks of one to get past."""
        return self.pressed or bool(self.failed)

    @property
    def failing(self) -> set[str]:
        """The names on the lines that say what fails, read once per new line (``rules.failures``)."""
        if self._failing[0] != len(self.failed):
            self._failing = (len(self.failed), names_in(self.failed))
        return self._failing[1]

    def _text(self, text: str, task: bool, files: bool = False) -> None:
        text = bounded(text)
        self.hosts |= text_hosts(text)
        self.project_names.update(package_key(m[1]) for m in VENDORED.finditer(text))
        self.registry_configured = self.registry_configured or REGISTRY_CONFIGURED.found(text)
        if files:  # only tool output shows a file exists; a prompt may name one to create
            self.project_names.update(
                package_key(next(g for g in m.groups() if g))
                for m in PROJECT_NAME.finditer(NUMBERED_LINE.sub("", text) if "|" in text else text)
            )
            self.seen_names.update(posixpath.basename(p.rstrip("/")) for p in path_token_set(text))
        if task:
            self.task_shingles |= shingles(words(text[:MAX_SHINGLE_TEXT]))

    def absorb(self, other: SessionFacts) -> None:
        """Keep what `other`, the facts of an earlier fold of this session, had shown.

        Used when a harness compacts its history (`serve.engine`): the new history is folded into
        fresh facts that first absorb the old ones, so nothing the session showed before the
        compaction is forgotten. Sets and maps are unioned; where the fold keeps one value, the
        one it would have kept wins (the working directory is the first one seen, so `other`'s;
        a remote's URL is the last one shown, so these facts'). The allowlist (configuration) and
        the count of messages folded stay these facts'.
        """
        self.hosts |= other.hosts
        if other.cwd is not None:
            self.cwd = other.cwd
        self.task_shingles |= other.task_shingles
        self.task_repos |= other.task_repos
        self.remotes = {**other.remotes, **self.remotes}
        self.seen_names |= other.seen_names
        self.created |= other.created
        self.known_revs |= other.known_revs
        self.test_literals |= other.test_literals
        self.graders |= other.graders
        self.task_files |= other.task_files
        self.invited |= other.invited
        self.named_repos |= other.named_repos
        self.asks_for_tests = self.asks_for_tests or other.asks_for_tests
        self.graded = self.graded or other.graded
        self.pressed = self.pressed or other.pressed
        self.run_roles |= other.run_roles
        self.answer_copies |= other.answer_copies
        self.loosening_asked = [*other.loosening_asked, *self.loosening_asked][:MAX_REQUESTS]
        self.edit_asked = [*other.edit_asked, *self.edit_asked][:MAX_REQUESTS]
        self.loosened = {**other.loosened, **self.loosened}
        self.policy = other.policy.merged(self.policy)
        self.scripts = {**other.scripts, **self.scripts}
        self.registry_configured = self.registry_configured or other.registry_configured
        self.offline = self.offline or other.offline
        self.user_words |= other.user_words
        self.user_packages |= other.user_packages
        self.manifest_hosts |= other.manifest_hosts
        self.user_urls |= other.user_urls
        self.asks_for_sessions = self.asks_for_sessions or other.asks_for_sessions
        self.asks_to_fetch = self.asks_to_fetch or other.asks_to_fetch
        self.failed = other.failed + [line for line in self.failed if line not in other.failed]
        self.skips_hooks_asked = self.skips_hooks_asked or other.skips_hooks_asked
        self.user_profiles |= other.user_profiles
        self.configured_hosts |= other.configured_hosts
        self.user_branches |= other.user_branches
        self.asks_for_upstream = self.asks_for_upstream or other.asks_for_upstream
        self.asks_to_recover = self.asks_to_recover or other.asks_to_recover
        self.not_to_copy |= other.not_to_copy
        self.local_images |= other.local_images
        self.project_names |= other.project_names
        self.patches = {**other.patches, **self.patches}
        self.produced |= other.produced
        self.secrets |= other.secrets
        self.secret_sources |= other.secret_sources
        self.asked_files |= other.asked_files
        self.worktrees = {**other.worktrees, **self.worktrees}


FILE_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "sed", "awk"})


def _reads_file(ncall: NormalCall, cwd: str | None) -> bool:
    if ncall.reads:
        return True
    if ncall.command is None:
        return False
    return any(c.name in FILE_READERS for c in read_shell(ncall.command, cwd).commands)
