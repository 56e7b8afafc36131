"""Payloads hidden in an encoding and fed to a shell or an interpreter.

`echo ZWNobyAx… | base64 -d | sh`, `xxd -r -p <<< 6563…`, `printf '\\x65\\x6e\\x76'`,
`python -c "exec(base64.b64decode('…'))"` and `eval(Buffer.from('…','base64').toString())`
all run text the rules would judge if it were written plainly. `payloads(text)` decodes every
base64, hex and escape-sequence literal in a call's text when the text also names a decoder
and something that executes, and returns the decoded texts that look like text (mostly
printable UTF-8); the engine judges each as a shell command and as program code, so the same
rules apply to the decoded form. Decoding repeats on its own output (nested encodings) up to
`MAX_DEPTH` levels. Nothing is executed.

Policy for what cannot be decoded: text that names a decoder and an executor but yields no
readable payload is `opaque(text)`; the engine reports it as an unknown (blocked when failing
closed), so an encoding the guard cannot read is never an allow by default.
"""

from __future__ import annotations

import base64
import binascii
import codecs

from .. import rx

MAX_DEPTH = 3
MAX_PAYLOADS = 16
MIN_PRINTABLE = 0.9
SINK = rx.compile(
    r"(?:^|[|;&(`\s'\"])(?:sh|bash|zsh|dash|ksh|eval|exec|source|python[0-9.]*|node|perl|ruby|php)\b"
    r"|\bexec\s*\(|\beval\s*\(|\bos\.system\(|\bsubprocess\.|\bchild_process\b|\$\(|`"
)
DECODER = rx.compile(
    r"\bbase64\b|\bb64decode\b|\batob\(|\bBuffer\.from\(|\bxxd\b|\bfromhex\b|\bunhexlify\b|"
    r"\bprintf\b|\becho\s+-e\b|\$'|\\x[0-9a-fA-F]{2}|\bcodecs\.decode\b|\brot.?13\b|\bopenssl\b|"
    r"\bdecode\(|\bchr\(|String\.fromCharCode|\brev\b|\btr\s|\[::-1\]|\breverse\(\)"
)
BASE64 = rx.compile(r"(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/_-]{8,}={0,2})(?![A-Za-z0-9+/=_-])")
HEX = rx.compile(r"(?<![0-9a-fA-F])((?:[0-9a-fA-F]{2}){6,})(?![0-9a-fA-F])")
ESCAPES = rx.compile(r"(?:\\x[0-9a-fA-F]{2}|\\[0-7]{3}|\\u[0-9a-fA-F]{4}|\\[ntr\\'\"]|[^\\'\"\n]){3,}")
SINGLE_QUOTED = rx.compile(r"'([^'\n]{6,})'")
DOUBLE_QUOTED = rx.compile(r'"([^"\n]{6,})"')
CHR_CALLS = rx.compile(r"(?:chr|String\.fromCharCode)\(\s*(\d{1,3})\s*\)")


def _readable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text.strip()) < 2:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in text)
    return text if printable / len(text) >= MIN_PRINTABLE else None


def _base64(token: str) -> str | None:
    padded = token + "=" * (-len(token) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in token or "_" in token) else None)
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def _escapes(token: str) -> str | None:
    if token.count("\\") < 3:
        return None
    try:
        raw = codecs.escape_decode(token.encode("latin-1", "backslashreplace"))[0]
    except (ValueError, UnicodeError):
        return None
    return _readable(raw) if isinstance(raw, bytes) else None


def _decoded(text: str) -> list[str]:
    out: list[str] = []
    for m in BASE64.finditer(text):
        token = m[1]
        if token.isalpha() and (token.islower() or token.isupper()):
            continue  # a plain word, not an encoding
        found = _base64(token)
        if found is not None:
            out.append(found)
    for m in HEX.finditer(text):
        found = _readable(bytes.fromhex(m[1]))
        if found is not None:
            out.append(found)
    for m in ESCAPES.finditer(text):
        found = _escapes(m[0])
        if found is not None:
            out.append(found)
    chars = [int(m[1]) for m in CHR_CALLS.finditer(text)]
    if len(chars) >= 3 and all(c < 0x110000 for c in chars):
        out.append("".join(map(chr, chars)))
    quoted = SINGLE_QUOTED.findall(text) + DOUBLE_QUOTED.findall(text)
    if rx.search(r"\brot.?13\b|\btr\s+['\"]?(?:A-Za-z|a-zA-Z|a-z)['\"]?\s+['\"]?[N-Zn-z]", text):
        out += [codecs.decode(w, "rot13") for w in quoted]
    if rx.search(r"\|\s*rev\b|\[::-1\]|\.reverse\(\)", text):  # `echo 'hs | 1 ohce' | rev | sh`
        out += [w[::-1] for w in quoted]
    return out


def executes_decoded(text: str) -> bool:
    return DECODER.search(text) is not None and SINK.search(text) is not None


def payloads(text: str) -> list[str]:
    """Decoded texts a call runs, outermost first (empty when it runs no encoded text)."""
    if not executes_decoded(text):
        return []
    out: list[str] = []
    frontier = [text]
    for _ in range(MAX_DEPTH):
        found: list[str] = []
        for item in frontier:
            found += [d for d in _decoded(item) if d not in out and d != item]
        out += found
        frontier = found
        if not found or len(out) >= MAX_PAYLOADS:
            break
    return out[:MAX_PAYLOADS]


def opaque(text: str) -> bool:
    """Runs decoded text the guard could not read (see the module docstring's policy)."""
    return executes_decoded(text) and not payloads(text) and _encoded_input(text)


def _encoded_input(text: str) -> bool:
    # A decoder with a pipe or exec into a shell, but no literal we could decode: the encoded
    # text comes from a file or a variable.
    return (
        rx.search(
            r"(?:base64\s+(?:-d|--decode|-D)|xxd\s+-r|b64decode|fromhex|unhexlify|atob\(|"
            r"Buffer\.from\([^)]*['\"](?:base64|hex)['\"])",
            text,
        )
        is not None
        and rx.search(r"\|\s*(?:sh|bash|zsh|dash|python[0-9.]*|node|perl)\b|\bexec\s*\(|\beval\b", text)
        is not None
    )
