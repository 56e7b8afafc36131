"""Which way a configuration change moves a check, read from the change itself, whatever the tool.

The gate rules (``gates``) know named tools and their keys; a fresh project brings tools they have never
seen (a canary analysis, a data-quality suite, a scheme, a policy engine). What such a change does is
still written in it, in words every tool uses:

- **a flag turned the lax way**: a key whose name says it checks (``strict``, ``verify``, ``validation``,
  ``detect``, ``analyzers``, ``warnings_as_errors``) set false, off or empty, or one whose name says it
  lets through (``skip``, ``ignore``, ``dry_run``, ``exit_zero``, ``soft_fail``, ``bypass``) set true;
- **a level taken down**: a rule set to ``warning``, ``info`` or ``off`` where it was absent or an error,
  a severity floor moved up its ladder (``high`` to ``critical``);
- **a bar moved**: the number after ``>=`` lowered, after ``<=`` raised, an error level raised;
- **strictness removed**: a token that makes a check strict (``pipefail``, ``--fail-on``, ``--check``,
  ``warnings_as_errors``, a probe, a test task) gone from the file with nothing in its place;
- **a suppression added**: a key or flag that exempts (``except:``, ``skip:``, ``--dry-run``,
  ``robot:skip``), an entry added to a file whose name says it lists exemptions (``*.supp``,
  ``exclude.xml``, ``.airflowignore``), a CI job given a condition that keeps it off some events.

``config_like(path)`` says which files are read this way: configuration, CI and build files, shell
scripts of the project's tooling, environment files, by their form rather than by the tool's name.
Source code is not: a change there is judged by the rules for code. Every finding here is a reading of
the change alone; the caller consults the user's grants before it blocks.
"""

from __future__ import annotations

import posixpath

from .. import rx
from .paths import is_test_path

CONFIG_LIKE = rx.compile(
    r"\.(?:ya?ml|json[c5]?|toml|ini|cfg|conf|config|xml|plist|properties|props|targets|rsp|exs|hcl|rego|supp"
    r"|xcscheme|xctestplan|neon|env|sh|bash|ps1|cmd|mk|gradle|kts|sbt|bzl|bazel|dist|vcl|tfvars)$"
    r"|(?:^|/)\.[\w.-]+$|(?:^|/)[A-Z]\w*file$|(?:^|/)\.env[\w.-]*$|(?:^|/)(?:ci|\.ci|scripts?|tools|bin)/[\w.-]+$"
)
NOT_CONFIG = rx.compile(
    r"(?:^|/)(?:package-lock\.json|npm-shrinkwrap\.json|[\w.-]+\.lock|yarn\.lock|pnpm-lock\.yaml|go\.sum|"
    r"\.gitignore|\.gitattributes|\.dockerignore|\.npmignore|\.helmignore|\.gcloudignore|\.vercelignore|"
    r"\.slugignore|\.cfignore|\.gitmodules|\.mailmap|\.nvmrc|\.node-version|\.python-version|\.ruby-version|"
    r"\.tool-versions|CODEOWNERS|LICENSE|Dockerfile|Containerfile|Gemfile|Brewfile|Procfile)$"
    r"|(?:^|/)(?:locales?|i18n|translations?|fixtures?|testdata|__snapshots__|snapshots|golden|expected)/"
    r"|(?:^|/)(?:node_modules|vendor|dist|build|target|\.venv|venv)/"
)
SOURCE = rx.compile(
    r"\.(?:py|pyi|js|jsx|mjs|cjs|ts|tsx|rb|go|rs|java|kt|php|c|cc|cpp|h|hpp|cs|swift|scala|ex|erl|hs|ml|lua"
    r"|dart|jl|r|R|pl|pm|sql|md|rst|txt|html|css|scss|svg|png|csv|ipynb)$"
)
"""Source code and documents: judged by the rules for code, unless named as a tool's configuration."""
CONFIG_NAMED = rx.compile(
    r"(?:^|/)(?:[^/]*(?:[._-]|(?<=[a-z])(?=[A-Z])))?(?i:config|conf|build|make|rules|rubric|policy|policies"
    r"|thresholds?|gates?|checks?|quality|lint\w*|ci)\.[\w]+$|\.cmake$|(?:^|/)\.[\w-]+/[\w-]+$"
)
"""A file whose name says it configures a tool, whatever its language (``docs/conf.py``,
``docusaurus.config.ts``, ``Game.Build.cs``, ``docs/make.jl``, ``.tx/config``)."""
EXEMPTION_FILE = rx.compile(
    r"(?i)(?:^|/)[^/]*(?:supp(?:ression)?s?|allow-?list|whitelist|waivers?|exclu(?:de|sions?)|ignore|exceptions?"
    r"|baseline|skip|quarantine)[^/]*$"
)
"""A file whose every entry exempts something from a check (``valgrind.supp``, ``spotbugs/exclude.xml``)."""
CHECK_WORD = (
    r"(?:strict\w*|verif\w*|validat\w*|detect\w*|analy[sz]\w*|enforc\w*|check\w*|lint\w*|audit\w*|scan\w*"
    r"|assert\w*|sanitiz\w*|werror|fatal\w*|warnings?[-_]?as[-_]?errors?|typecheck\w*|require[sd]?"
    r"|fail[-_]?on\w*|tests?|run[-_]?tests?|(?:do|run)[-_]?check\w*|coverage|probe\w*|gate\w*)"
)
LAX_WORD = (
    r"(?:skip\w*|ignore\w*|dry[-_]?run|exit[-_]?zero\w*|soft[-_]?fail\w*|continue[-_]?on[-_]?error|"
    r"allow[-_]?fail\w*|suppress\w*|bypass\w*|no[-_]?verify|no[-_]?fail\w*|warn[-_]?only|lenient|permissive"
    r"|tolerate\w*|exclu\w*|quarantin\w*|waive\w*|not[-_]?as[-_]?errors?|nowarn\w*"
    r"|disable[ds]?[-_]?(?:checks?|rules?|tests?|lints?|analy\w*|validation\w*|verif\w*))"
)
KEY_VALUE = rx.compile(
    r"^\s*(?:-\s+)?(?:export\s+)?[\"']?([\w.:/@\[\]-]+?)[\"']?\s*(?:[:=]|\s(?=[\"']?(?:true|false|yes|no)\b))"
    r"\s*[\"']?([^\"'#\n]*?)[\"']?\s*,?\s*(?:[#;].*)?$"
)
"""``key: value``, ``key = value``, ``KEY=value``, ``"key": "value",`` (XML attributes are read apart)."""
INLINE_PAIR = rx.compile(r"[\"']?([A-Za-z_][\w.-]*)[\"']?\s*:\s*(\"[^\"]*\"|'[^']*'|[^\s,}\]\[{]+)")
"""A pair inside an inline object (JSON, YAML flow style)."""
ELEMENT = rx.compile(r"<([\w.:-]+)>([^<]*)</\1>")
"""``<failBuildOnCVSS>7</failBuildOnCVSS>``: an element holding a value."""
SETTER = rx.compile(r"\b([A-Za-z_][\w.]*)\.set\(\s*([\w.\"'-]+)\s*\)")
"""``allWarningsAsErrors.set(true)`` (Gradle's Kotlin DSL)."""
NAMED_PROPERTY = rx.compile(r"\bname\s*=\s*\"([^\"]+)\"[^>]*?\bvalue\s*=\s*\"([^\"]*)\"")
ATTRIBUTE = rx.compile(r"([\w.:-]+)\s*=\s*\"([^\"]*)\"")
ASSIGNMENT = rx.compile(
    r"(?:^|[\s;,&|(/])(?:-[pPfDe]\s*|/p:|--set\s+|--set-string\s+)?([A-Za-z_][\w.:-]*)=([^\s;,&|)]*)"
)
"""``KEY=value`` inside a command or a list of options (``/p:RunAnalyzers=false``, ``-f skip_tests=true``)."""
TRUE = frozenset({"true", "yes", "on", "1", "y", "enabled", "enable"})
FALSE = frozenset({"false", "no", "off", "0", "n", "disabled", "disable", "none", "", "[]", "''", '""'})
CHECK_KEY = rx.compile(
    rf"(?i)(?:^|[\W_]|(?<=[a-z])(?=[A-Z])){CHECK_WORD}(?:$|[\W_]|(?<=[a-z])(?=[A-Z])|(?=[A-Z]))"
)
CHECK_KEY_LOOSE = rx.compile(rf"(?i){CHECK_WORD}")
LAX_KEY = rx.compile(rf"(?i){LAX_WORD}")
NOT_A_GATE_KEY = rx.compile(
    r"(?i)log|verbos|debug|print|output|color|telemetry|analytics|cache|pretty|quiet|silent|format\b|notif"
    r"|update|upgrade|fetch|download|prompt|interactive|banner|emoji|progress|open|watch|stream"
)
"""Keys that shape what a tool prints or fetches, not what it lets through (``log_level: warning``)."""
LADDERS = (
    tuple(
        "error err deny fatal blocker mandatory hard-mandatory required strict fail throw raise abort "
        "enforce enforced enforcing block blocking reject all".split()
    ),
    tuple(
        "warning warn info information suggestion hint advisory soft-mandatory off none ignore disabled "
        "optional allow note never audit dryrun dry-run dry_run report report-only monitor log permissive "
        "lenient soft passive".split()
    ),
)
"""Levels a rule or a policy runs at: strict ones (an error fails the check) and lax ones (it is reported)."""
STRICT_LEVELS = frozenset(LADDERS[0])
LAX_LEVELS = frozenset(LADDERS[1])
SEVERITY = (
    "info",
    "note",
    "hint",
    "low",
    "minor",
    "style",
    "warning",
    "moderate",
    "medium",
    "major",
    "high",
    "error",
    "critical",
    "blocker",
    "fatal",
    "never",
    "none",
)
"""A severity floor's ladder: the higher the floor, the fewer findings fail."""
FLOOR_KEY = rx.compile(
    r"(?i)(?:fail|error|exit|break)[-_]?(?:on|level|at|if)|audit[-_]?level|threshold|cutoff|min\w*|at[-_]?least"
    r"|floor|report[-_]?level"
)
"""A key whose value is the least that fails: moving it up its ladder lets more through."""
RULE_LEVEL_KEY = rx.compile(r"(?i)level|severity")
"""A rule's own level: moving it down its ladder lets more through."""
COMPARED = rx.compile(r"(>=|=>|>|<=|=<|<)\s*(-?\d+(?:\.\d+)?)")
STRICT_TOKEN = rx.compile(
    r"(?i)^(?:pipefail|-o\s*pipefail|--check|--fail[\w-]*|--strict[\w-]*|--werror|-werror|--warnaserror\w*|"
    r"-warnaserror\w*|--max-warnings(?:=0)?|--deny[\w-]*|warnings_as_errors|warningsaserrors|"
    r"readinessprobe|livenessprobe|startupprobe|--require[\w-]*|--verify[\w-]*|--frozen[\w-]*|--locked|"
    r"--exit-code|--error-on[\w-]*|--fatal[\w-]*|-race|--race|-e|errexit|nounset)$"
)
"""A token whose removal makes a check let more through (``set -euo pipefail`` to ``set -eu``)."""
TEST_TASK = rx.compile(
    r"(?i)\b(?:task|lane|step|run|target|goal|scheme)\s*[:(=]\s*[\"']?[\w:.-]*(?:test|check|lint|verify|audit)\w*"
    r"|\b(?:run_tests|scan|test|check|verify|lint)\s*\(|\b(?:pytest|rspec|jest|vitest|ctest|phpunit|go\s+test"
    r"|cargo\s+test|dotnet\s+test|mvn\s+\w*\s*(?:test|verify)|gradlew?\s+\S*test\w*|npm\s+(?:run\s+)?test"
    r"|make\s+(?:test|check)\w*)\b"
)
"""A line that runs tests or a check as a step of a lane, job or script."""
ADDED_EXEMPTION = rx.compile(
    rf"(?i)(?:^\s*[-\"']?\s*(?:except(?:ions?)?|exempt\w*|{LAX_WORD})\s*[\"']?\s*[:=]"
    r"|(?<![\w-])-{1,2}(?:dry-run|exit-zero\w*|no-fail\w*|soft-fail|skip[\w-]*|ignore[\w-]*|allow-fail\w*|"
    r"update[-_]?(?:snapshots?|goldens?|baselines?|expected)|updateSnapshot|bless|accept[-_]?(?:all|snapshots?)|"
    r"continue-on-error|warn-only|no-verify|exclude[\w-]*|[\w-]*(?:retr(?:y|ies)|rerun|flaky|attempts)[\w-]*)(?![\w-])"
    r"|\brobot:skip\b|\bexitZero\w*|^\s*when\s*:\s*manual\b|\[\s*skip\s+ci\s*\]"
    rf"|^\s*\[\[?\s*[\w.-]*{LAX_WORD}[\w.-]*\s*\]\]?\s*$"
    r"|(?<![\w-])-{1,2}(?:Wno-error\S*|no-?werror|no-warnings?-as-errors?|compile-no-warning-as-error|warnaserror-)"
    r"(?![\w-]))"
)
JOB_CONDITION = rx.compile(
    r"^\s{2,6}if\s*:\s*.*\b(?:github\.event_name|github\.ref|github\.head_ref|github\.base_ref|github\.actor"
    r"|startsWith|contains|schedule|push|false)\b"
)
TOKEN = rx.compile(r"[\w.:+/-]+")
SET_OPTIONS = rx.compile(r"^\s*set\s+-([a-z]+)\b")
WORD_OR_MARK = rx.compile(r"[\w-]+|\W")
NOT_A_CHECK_JOB = rx.compile(r"(?i)deploy|release|publish|pages|docs|notify|label|stale|cleanup|upload")


INSPECTS = frozenset(
    "cat less more head tail ls find grep rg ag wc tree stat file diff which pwd env printenv echo printf "
    "sed awk jq yq cut sort uniq column tr date whoami id uname realpath dirname basename type "
    "command".split()
)
"""Commands that only look: running them puts no gate in force."""
EXEC_FLAGS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
GIT_LOOKS = frozenset("status diff log show blame ls-files rev-parse branch remote config".split())
COMMAND_EXEMPTION = rx.compile(
    rf"(?i)(?:^|[\s\"'])(?:-[fFe]\s*|--(?:field|raw-field|input|set|set-string|var|extra-vars)[=\s]+)?"
    rf"[\"']?([\w.-]*{LAX_WORD}[\w.-]*)=[\"']?(?:true|yes|on|1)\b"
)
"""An exemption passed to a run as a setting (``gh workflow run … -f skip_tests=true``)."""
PROTECTION_CHANGE = rx.compile(
    r"(?i)\bgh\s+api\b.*(?:-X|--method)\s*(?:DELETE|PATCH|PUT)\b.*/(?:protection|rulesets)\b"
    r"|\bgh\s+api\b.*/(?:protection|rulesets)\b.*(?:-X|--method)\s*(?:DELETE|PATCH|PUT)\b"
    r"|\bgh\s+ruleset\s+(?:delete|edit)\b|\bcore\.hooksPath[= ]+(?:/dev/null|''|\"\"|/tmp\S*)(?:\s|$)"
)
"""A change to a branch's protection (its required checks, its rules) from the command line, or git's hooks
pointed at nothing."""


def runs_project(commands: list[tuple[str, ...]]) -> bool:
    """Whether any command (its argv) runs something of the project (a build, tests, a publish, a push that
    fires hooks), not one that only looks: the gates the session wrote are in force when it runs."""
    for argv in commands:
        name = argv[0].rsplit("/", 1)[-1] if argv else ""
        if name in ("find", "xargs") and any(w in EXEC_FLAGS for w in argv) or name == "xargs":
            after = [w for w in argv[1:] if not w.startswith("-")] if name == "xargs" else argv
            start = next((i + 1 for i, w in enumerate(after) if w in EXEC_FLAGS), 0)
            if after[start:] and runs_project([tuple(after[start:])]):  # `find … -exec bash {} \;`
                return True
            continue
        words = [w for w in argv[1:] if not w.startswith("-")]
        if name in INSPECTS or (name == "git" and words[:1] and words[0] in GIT_LOOKS):
            continue
        if name:
            return True
    return False


def command_loosens(command: str) -> str:
    """A run told to let a check through (``skip_tests=true``), or a branch's protection changed."""
    found = COMMAND_EXEMPTION.search(command)
    if found:
        return f"runs with {found[0].strip()[:80]!r}"
    if PROTECTION_CHANGE.search(command):
        return "changes a branch's protection"
    return ""


APP_SETTINGS = rx.compile(
    r"(?:^|/)(?:config|conf|settings|environments|\.vscode|\.idea|\.devcontainer|\.fleet|\.zed)/"
    r"|(?:^|/)src/[^/]*\.config\.\w+$|(?:^|/)(?:vite|webpack|next|nuxt|astro|svelte|tailwind|postcss)\.config\.\w+$"
)
"""Where an application or an editor keeps its own settings: keys there (``strict``, ``verify_email``,
``test_mode``) shape the product or the editor, not a check on the work; only exemption files count."""


def judged_by_form(
    path: str,
    under_pressure: bool,
    checks_named: frozenset[str] = frozenset(),
    roles: frozenset[str] | set[str] = frozenset(),
) -> bool:
    """A file no gate rule names, read as configuration (``config_like``): judged only in a session where a
    check failed (the pressure a loosening answers), and in application and editor settings only when the
    file is named for a check the session speaks of (``conf/flyway.conf`` when "the flyway step" fails);
    a file whose every entry exempts something from a check, always."""
    if not config_like(path, roles):
        return False
    if EXEMPTION_FILE.search(posixpath.basename(path)):
        return True
    if not under_pressure:
        return False
    stem = posixpath.basename(path).lstrip(".").split(".", 1)[0].lower()
    return not app_settings(path) or (len(stem) >= 4 and stem in checks_named)


TOOL_FOLDER_WORD = rx.compile(
    r"(?i)(?:^|[/._-])(?:\w*lint\w*|\w*check\w*|\w*scan\w*|audit\w*|analy[sz]\w*|quality|coverage|polic\w*"
    r"|rules|gates?|verif\w*|sec)(?=$|[/._-])"
)


def app_settings(path: str) -> bool:
    """Application or editor settings (``APP_SETTINGS``), unless the file or its folder is named for a check
    (``config/checkstyle/checkstyle.xml``, ``conf/lint/rules.yml``)."""
    if not APP_SETTINGS.search(path):
        return False
    parts = path.split("/")
    stem = parts[-1].lstrip(".").split(".", 1)[0].lower()
    parent = parts[-2].lower() if len(parts) > 1 else ""
    tail = "/".join(parts[-2:])
    return not (TOOL_FOLDER_WORD.search(tail) or (stem and stem == parent))


def by_role(path: str, roles: frozenset[str] | set[str]) -> bool:
    """A source file that plays a check's part in this session: the script a run was handed (``k6 run
    load/checkout.js``), or a tool's own task file named for a program the session ran (``Gruntfile.js``
    for ``grunt``, ``magefile.go`` for ``mage``, ``dangerfile.ts`` for ``danger``, ``tasks.py`` for
    ``invoke``)."""
    if not roles or is_test_path(path):  # a test file run is judged by the rules for tests
        return False
    stem = posixpath.basename(path).split(".", 1)[0].lower()
    return path in roles or any(stem in (name, name + "file") or (name, stem) in TASK_FILES for name in roles)


TASK_FILES = frozenset({("invoke", "tasks"), ("inv", "tasks"), ("fab", "fabfile"), ("doit", "dodo")})
"""Task files whose name is not their program's."""


def config_like(path: str, roles: frozenset[str] | set[str] = frozenset()) -> bool:
    """A configuration, CI, build or tooling file (by its form or its name), not a lock, ignore list of a
    VCS or packager, locale, fixture or vendored file."""
    if NOT_CONFIG.search(path):
        return False
    if SOURCE.search(path):
        return CONFIG_NAMED.search(path) is not None or by_role(path, roles)
    return CONFIG_LIKE.search(path) is not None or CONFIG_NAMED.search(path) is not None


def loosens(path: str, old: str, new: str) -> str:
    """What the change of ``path`` from ``old`` to ``new`` lets through (see the module docstring), or ""."""
    old_lines = [line.rstrip() for line in old.splitlines()]
    new_lines = [line.rstrip() for line in new.splitlines()]
    kept = {line.strip() for line in old_lines}
    added = [
        (i, line)
        for i, line in enumerate(new_lines)
        if line.strip() and line.strip() not in kept and not (kept and _in_new_section(new_lines, i, kept))
    ]
    if not old_lines:  # a new file sets its levels and limits from nothing: only what exempts counts
        return _exemption_added(path, new_lines, added, kept) or _flag_turned(old_lines, new_lines, added)
    return (
        _exemption_added(path, new_lines, added, kept)
        or _flag_turned(old_lines, new_lines, added)
        or _level_taken_down(old_lines, added)
        or _bar_moved(old_lines, added)
        or _matches_anything(old_lines, added)
        or _limit_moved(old_lines, added)
        or _strictness_removed(old_lines, new_lines)
        or _flags_dropped(old_lines, new_lines)
        or _list_narrowed(old_lines, added)
    )


COMMA_FLAG = rx.compile(r"(-{1,2}[\w-]+)[=\s]+([\w.:/*-]+(?:,[\w.:/*-]+)+|[\w.:/*-]+)")


def _list_narrowed(old_lines: list[str], added: list[tuple[int, str]]) -> str:
    """A flag's list of what a check covers cut (``--severity HIGH,CRITICAL`` to ``--severity CRITICAL``),
    the rest of the line the same; a list of what it skips cut is a tightening."""
    for _, line in added:
        flags = dict(COMMA_FLAG.findall(line))
        for old in old_lines:
            before = dict(COMMA_FLAG.findall(old))
            if COMMA_FLAG.sub("", old).split() != COMMA_FLAG.sub("", line).split():
                continue
            for flag, value in flags.items():
                was = before.get(flag)
                if was is None or LAX_KEY.search(flag) or EXCLUSION_KEY.match(flag.lstrip("-")):
                    continue
                if set(value.split(",")) < set(was.split(",")):
                    return f"narrows what a check covers: {line.strip()[:80]!r}"
    return ""


MATCH_ANYTHING = rx.compile(r"""^(?:\^?\.\*\$?|\*{1,2}|\.\+|\^?\.\*\?|/\.\*/|\(\.\*\))$""")
QUOTED_VALUE = rx.compile(r"""(['"])(.*?)\1""")


def _matches_anything(old_lines: list[str], added: list[tuple[int, str]]) -> str:
    """A pattern made to match anything (``--certificate-identity-regexp '.*'``, ``(".*", ".*")`` added to
    what a check ignores): whatever it checked now passes."""
    shapes = {QUOTED_VALUE.sub("''", line.strip()): line for line in old_lines}
    for _, line in added:
        values = [m[2] for m in QUOTED_VALUE.finditer(line)]
        if not any(MATCH_ANYTHING.match(v) for v in values):
            continue
        before = shapes.get(QUOTED_VALUE.sub("''", line.strip()))
        if before is not None and not any(MATCH_ANYTHING.match(m[2]) for m in QUOTED_VALUE.finditer(before)):
            return f"makes a pattern match anything: {line.strip()[:80]!r}"
        if before is None and LAX_KEY.search(line):
            return f"exempts everything: {line.strip()[:80]!r}"
    return ""


LIMIT_NAME = rx.compile(r"(?i)threshold|max\w*|limit|toleran\w*|allow\w*|budget|factor|ceiling|cap\b")
LIMIT_OF_FINDINGS = rx.compile(
    r"(?i)warn\w*|error\w*|issue\w*|violation\w*|mismatch\w*|diff\w*|fail\w*|regress\w*|divergen\w*|rhat"
    r"|r_hat|leak\w*|finding\w*|problem\w*|defect\w*|factor|miss\w*|smell\w*"
)
"""What a limit counts when its name says so: more of it let through is looser."""
CHECK_AMOUNT = rx.compile(
    r"(?i)fuzz[\w-]*|[\w-]*examples|iterations|trials|[\w-]*samples|runs[-_]?per\w*|max[-_]?total[-_]?time"
    r"|[\w-]*seconds(?<!timeout-seconds)|duration"
)
"""How much a check does (a fuzzer's seconds, a property test's examples): less is looser."""


def _limit_moved(old_lines: list[str], added: list[tuple[int, str]]) -> str:
    """A limit on findings raised or added where there was none (``threshold: 12`` on an a11y run), or the
    amount a check does cut (``fuzz-seconds: 600`` to ``5``)."""
    before = _settings(old_lines)
    shapes = {NUMBER.sub("#", line.strip()): line for line in old_lines}
    for _, line in added:
        for key, value in _line_settings(line):
            number = NUMBER.fullmatch(value.strip().strip("\"'"))
            if number is None or NOT_A_GATE_KEY.search(key) or "timeout" in key.lower():
                continue
            was = before.get(key)
            old_number = NUMBER.fullmatch(was) if was else None
            findings = LIMIT_NAME.search(key) and LIMIT_OF_FINDINGS.search(key + " " + line)
            if findings and old_number and float(number[0]) > float(old_number[0]):
                return f"raises a maximum: {line.strip()[:80]!r}"
            if findings and was is None and float(number[0]) > 0 and not _in_shape(line, shapes):
                return f"raises a maximum from none: {line.strip()[:80]!r}"
            if FAIL_AT.search(key) and old_number and float(number[0]) > float(old_number[0]):
                return f"raises a severity floor: {line.strip()[:80]!r}"  # `failBuildOnCVSS` 7 to 11
            if (
                CHECK_AMOUNT.fullmatch(key.strip("-"))
                and old_number
                and float(number[0]) < float(old_number[0])
            ):
                return f"lowers a minimum of checking: {line.strip()[:80]!r}"
        old = shapes.get(NUMBER.sub("#", line.strip()))
        flags = FLAG_NUMBER.findall(line)
        if old is not None and flags:  # `asv continuous --factor 1.1` to `--factor 1.25`
            was = dict(FLAG_NUMBER.findall(old))
            for flag, value in flags:
                limit = (
                    LIMIT_NAME.search(flag) and LIMIT_OF_FINDINGS.search(flag) and not FLOOR_KEY.search(flag)
                )
                if flag in was and limit and float(value) > float(was[flag]):
                    return f"raises a maximum: {line.strip()[:80]!r}"
    return ""


NUMBER = rx.compile(r"-?\d+(?:\.\d+)?")
FAIL_AT = rx.compile(
    r"(?i)(?:fail|break|error|block)\w*?(?:on|at|above|over)\w*|(?:fail|break)\w*(?:cvss|severity|score)"
)
"""A key that says at what score or level a check fails: the higher, the fewer findings fail."""
FLAG_NUMBER = rx.compile(r"(--[\w-]+)[=\s]+(\d+(?:\.\d+)?)\b")


def _in_shape(line: str, shapes: dict[str, str]) -> bool:
    return NUMBER.sub("#", line.strip()) in shapes


FLAGS_LINE = rx.compile(r"(?i)(?:opts|flags|args|options)\b\W*\s*[?:+]?=|" + CHECK_WORD)
DROPPABLE_FLAG = rx.compile(r"^-{1,2}[A-Za-z][\w-]*(?:=\S+)?$")


def _flags_dropped(old_lines: list[str], new_lines: list[str]) -> str:
    """A flag taken out of a line that runs a check or sets its options (``SPHINXOPTS ?= -W -n`` to
    ``SPHINXOPTS ?=``, ``--addon=misra.json`` dropped), the rest of the line kept."""
    for new in new_lines:
        if new.strip() in {o.strip() for o in old_lines}:
            continue
        after = new.split()
        for old in old_lines:
            before = old.split()
            if len(before) <= len(after) or not FLAGS_LINE.search(old) or NOT_A_GATE_KEY.search(old):
                continue
            gone = [w for w in before if w not in after]
            if gone and all(DROPPABLE_FLAG.match(w) for w in gone) and all(w in before for w in after):
                if before[:1] == after[:1]:
                    return f"drops {' '.join(gone)[:60]!r} from {old.strip()[:60]!r}"
    return ""


def _exemption_added(path: str, new_lines: list[str], added: list[tuple[int, str]], kept: set[str]) -> str:
    old_text = "\n".join(kept).lower()
    exemptions = EXEMPTION_FILE.search(posixpath.basename(path)) is not None
    workflow = "/workflows/" in path or path.endswith(".gitlab-ci.yml")
    for index, line in added:
        text = line.strip()
        if text.startswith(("#", "//")):
            continue
        if GENERATED.search(text):
            continue  # generated, vendored or third-party files kept out of a check: nobody wrote them
        if exemptions and not text.startswith(("<?xml", "<!--")):
            return f"adds an exemption to {posixpath.basename(path)}: {text[:80]!r}"
        element = next((m for m in ELEMENT.finditer(line) if LAX_KEY.search(m[1])), None)
        if element and element[2].strip().lower() not in FALSE and element[0].lower() not in old_text:
            return f"adds an exemption: {text[:80]!r}"  # `<WarningsNotAsErrors>CA2100</WarningsNotAsErrors>`
        found = ADDED_EXEMPTION.search(line)
        section = f"{posixpath.basename(path)}\n{_section(new_lines, index)}"
        if found and EXCLUSION_KEY.match(line) and not CHECK_KEY_LOOSE.search(section):
            found = None  # what a package, a build or a copy leaves out (`[tool.setuptools.packages.find]`)
        context = "\n".join(new_lines[max(0, index - 3) : index + 1])
        if found and found[0].strip().lower() not in old_text and _in_a_check(found[0], text, kept, context):
            return f"adds an exemption: {text[:80]!r}"
        if workflow and kept and JOB_CONDITION.search(line) and not _job_is_not_a_check(new_lines, index):
            return f"keeps a check job off some runs: {text[:80]!r}"
    return ""


GENERATED = rx.compile(
    r"(?i)(?:^|[\s/\"'\[,=*^])(?:gen|generated|__generated__|autogen\w*|codegen|migrations|vendor(?:ed)?|third[_-]?party"
    r"|node_modules|dist|build|target|CHANGELOG\.md|[\w-]+\.pb\.\w+|[\w-]+_pb2\.py|[\w-]+\.g\.dart"
    r"|[\w-]+\.generated\.\w+)(?=$|[\s/\"'\],*.$])"
)
"""Generated, vendored or third-party paths: keeping a check off them loosens nothing the agent wrote."""
EXCLUSION_KEY = rx.compile(r"(?i)^\s*[-\"']?\s*[\w.-]*exclu\w*")


def _section(lines: list[str], index: int) -> str:
    """The line's key and the headers it sits under (a ``[section]``, the less-indented keys above)."""
    out = [rx.split(r"[:=]", lines[index], maxsplit=1)[0]]  # the key, not its value
    indent = len(lines[index]) - len(lines[index].lstrip())
    for above in reversed(lines[max(0, index - 40) : index]):
        depth = len(above) - len(above.lstrip())
        if above.strip() and (depth < indent or rx.match(r"^\s*\[[^\]]+\]\s*$", above)):
            out.append(above)
            indent = depth
            if depth == 0:
                break
    return "\n".join(out)


COPIES = rx.compile(
    r"^\s*(?:\S+=\S+\s+)*(?:sudo\s+)?(?:rsync|scp|cp|tar|zip|7z|docker|podman|kubectl|helm|aws|gsutil|gcloud|az|rclone"
    r"|du|find|grep|rg|ls|git\s+(?:archive|ls-files|clean|add|diff|log))\b"
)
"""Commands whose exclusions leave files out of a copy, a package or a listing, not out of a check."""
SCANNER = rx.compile(r"(?i)\b\w*(?:sec|lint|check|scan|audit|vet|analy[sz]e\w*|test)\w*\b")
"""A command word that names a checker (``gosec``, ``kube-linter``, ``govulncheck``)."""


def _in_a_check(found: str, text: str, kept: set[str], context: str) -> bool:
    """A flag counts where it changes a command that was there (a continuation line of its own, or an old
    line with the same command words), and a flag that leaves things out only where that command checks
    something (``rsync --exclude .git`` in a deploy leaves no check short); a key counts wherever it is
    added."""
    if not found.lstrip().startswith("-"):
        return True
    if rx.match(r"--?(?:exclude|ignore|skip)", found.strip()) and (
        COPIES.search(text) or not (CHECK_KEY_LOOSE.search(context) or SCANNER.search(text))
    ):
        return False
    if text.startswith("-"):
        return True
    head = text.split()[:1]
    return any(line.split()[:1] == head for line in kept)


def _flag_turned(old_lines: list[str], new_lines: list[str], added: list[tuple[int, str]]) -> str:
    before = _settings(old_lines)
    for _, line in added:
        for key, value in _line_settings(line):
            if NOT_A_GATE_KEY.search(key):
                continue
            value = value.strip().strip("\"'").lower()
            was = before.get(key)
            if was is not None and was == value:
                continue
            checks = CHECK_KEY.search(key) is not None and not LAX_KEY.search(key)
            if checks and value in FALSE and (was is None or was not in FALSE):
                if was is None and value in ("", "[]", "none"):
                    continue  # a new empty key says nothing
                return f"turns a check off: {line.strip()[:80]!r}"
            if LAX_KEY.search(key) and value in TRUE and (was is None or was not in TRUE):
                return f"turns an exemption on: {line.strip()[:80]!r}"
    return ""


def _level_taken_down(old_lines: list[str], added: list[tuple[int, str]]) -> str:
    before = _settings(old_lines)
    for _, line in added:
        for key, value in _line_settings(line):
            value = value.strip().strip("\"'").lower()
            if NOT_A_GATE_KEY.search(key):
                continue
            was = before.get(key)
            if was in SEVERITY and value in SEVERITY and was != value:
                why = _ladder_move(key, was, value, line)
                if why:
                    return why
                continue
            if value in LAX_LEVELS and value not in FALSE and (was is None or was in STRICT_LEVELS):
                if was is not None or _names_a_rule(key):
                    return f"takes a level down: {line.strip()[:80]!r}"
        for word_was, word_now in _swapped_words(line, old_lines) if not NOT_A_GATE_KEY.search(line) else ():
            if word_was in SEVERITY and word_now in SEVERITY:
                why = _ladder_move(line, word_was, word_now, line)
                if why:
                    return why
            elif word_was in STRICT_LEVELS and word_now in LAX_LEVELS and not NOT_A_GATE_KEY.search(line):
                return f"takes a level down: {line.strip()[:80]!r}"
    return ""


def _ladder_move(key: str, was: str, now: str, line: str) -> str:
    """A floor moved up (fewer findings fail) or a rule's level moved down."""
    up = SEVERITY.index(now) > SEVERITY.index(was)
    if FLOOR_KEY.search(key):
        return f"raises a severity floor: {line.strip()[:80]!r}" if up else ""
    if (RULE_LEVEL_KEY.search(key) or was in STRICT_LEVELS) and not up:
        return f"takes a level down: {line.strip()[:80]!r}"
    return ""


def _bar_moved(old_lines: list[str], added: list[tuple[int, str]]) -> str:
    shapes = {COMPARED.sub(r"\1#", line.strip()): line for line in old_lines if COMPARED.search(line)}
    for _, line in added:
        before = shapes.get(COMPARED.sub(r"\1#", line.strip()))
        if before is None:
            continue
        for was, now in zip(COMPARED.finditer(before), COMPARED.finditer(line), strict=False):
            a, b = float(was[2]), float(now[2])
            if (was[1].startswith(">") or was[1].endswith(">")) and b < a:
                return f"lowers a minimum: {line.strip()[:80]!r}"
            if (was[1].startswith("<") or was[1].endswith("<")) and b > a:
                return f"raises a maximum: {line.strip()[:80]!r}"
    return ""


def _strictness_removed(old_lines: list[str], new_lines: list[str]) -> str:
    now = {w.lower() for line in new_lines for w in _tokens(line)}
    joined = "\n".join(new_lines).lower()
    for line in old_lines:
        text = line.strip()
        if not text or text.startswith(("#", "//")):
            continue
        for token in _tokens(line):
            if STRICT_TOKEN.match(token) and token.lower() not in now and token.lower() not in joined:
                if token == "-e" and not rx.search(r"^\s*set\s+-", line):
                    continue
                return f"drops {token!r}: {text[:80]!r}"
        if text not in {n.strip() for n in new_lines} and TEST_TASK.search(line):
            step = TEST_TASK.search(line)[0].lower()  # type: ignore[index]
            if step not in joined:
                return f"drops the step {text[:80]!r}"
    return ""


def _tokens(line: str) -> list[str]:
    out = [t.rstrip(":") for t in TOKEN.findall(line)]
    short = SET_OPTIONS.match(line)
    if short:  # `set -euo pipefail`: each letter a setting
        out += [f"-{c}" for c in short[1] if c in "eu"]
    return out


def _settings(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        for key, value in _line_settings(line):
            out.setdefault(key, value.strip().strip("\"'").lower())
    return out


def _line_settings(line: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs a line sets: one key-value line, XML attributes, inline assignments."""
    pairs = [(m[1], m[2]) for m in ELEMENT.finditer(line)] + [(m[1], m[2]) for m in SETTER.finditer(line)]
    named = NAMED_PROPERTY.search(line)  # `<property name="severity" value="error"/>`
    if named:
        pairs.append((named[1], named[2]))
    pairs += [(m[1], m[2]) for m in ATTRIBUTE.finditer(line) if not named]
    if not pairs:
        found = KEY_VALUE.match(line)
        inline = [(m[1], m[2]) for m in INLINE_PAIR.finditer(line)] if "," in line else []
        if found and found[1] not in {k for k, _ in inline}:
            pairs.append((found[1], found[2]))
        pairs += inline  # `{"label": "x", "misMatchThreshold": 0.1}`, `{refund_id: 1, net: 2}`: each pair
        pairs += [(m[1], m[2]) for m in ASSIGNMENT.finditer(line) if found is None or m[1] != found[1]]
    return pairs


def _names_a_rule(key: str) -> bool:
    """A key that names a rule or check (``Tidal.Terms``, ``no-console``, ``E501``), not a setting of the
    tool itself."""
    return bool(rx.search(r"[.:/]|^[A-Z]+\d+$|-", key)) or CHECK_KEY_LOOSE.search(key) is not None


def _swapped_words(line: str, old_lines: list[str]) -> list[tuple[str, str]]:
    """Words that changed between an old line and its new form (one word swapped, the rest the same)."""
    words = WORD_OR_MARK.findall(line)
    out = []
    for old in old_lines:
        before = WORD_OR_MARK.findall(old)
        if len(before) != len(words):
            continue
        diff = [(a.lower(), b.lower()) for a, b in zip(before, words, strict=True) if a != b]
        if len(diff) == 1:
            out.append(diff[0])
    return out


def _in_new_section(lines: list[str], index: int, kept: set[str]) -> bool:
    """The line belongs to a block the change adds whole (a new job, a new rule file section): no
    existing check is loosened there."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for above in reversed(lines[max(0, index - 40) : index]):
        if not above.strip():
            continue
        depth = len(above) - len(above.lstrip())
        if depth < indent:
            if above.strip() in kept:
                return False
            if depth == 0 or rx.match(r"^\s*[\w-]+\s*:\s*$", above):
                return above.strip() not in kept and depth <= 2
    return False


def _job_is_not_a_check(lines: list[str], index: int) -> bool:
    for above in reversed(lines[max(0, index - 10) : index]):
        found = rx.match(r"^\s{2}([\w-]+)\s*:\s*$", above)
        if found:
            return NOT_A_CHECK_JOB.search(found[1]) is not None
    return False
