"""The images a task's Dockerfile starts ``FROM``, and local stand-ins for the common ones.

Harbor tasks start from registry images (``python:3.11-slim`` most often). A machine that reaches package
registries but no image registry cannot pull them, and the engine builds with ``pull=False`` anyway. So
before a task image is built, each ``FROM`` image the engine lacks is either replaced, in the build's own
copy of the Dockerfile, by a stand-in built locally from the project's Debian base (Debian bookworm ships
Python 3.11, so ``python:3.11*`` and ``debian:bookworm*`` have one), or named in the error with the fix
(``docker pull`` or ``docker load``). The engine's own tags are never touched: a stand-in has its own name
(``harness-adapters/stand-in:<kind>-<base id>``), so an engine that later pulls the real image uses it.
A build with network also gets the host's CA bundle in each stage (``with_host_trust``): its ``RUN pip
install`` trusts what the host trusts, a proxy's own certificate included.
"""

from __future__ import annotations

import re

DEBIAN_BASE = "harness-adapters/debian-base:bookworm"
STAND_IN_REPO = "harness-adapters/stand-in"

_FROM = re.compile(r"^(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
_AS = re.compile(r"\s+AS\s+(\S+)", re.IGNORECASE)
_STAND_INS = {
    "python3.11": re.compile(r"python:3\.11(\.\d+)?(-slim)?(-bookworm)?"),
    "debian-bookworm": re.compile(r"debian:(bookworm|12)(-slim)?"),
}
_PYTHON_LAYER = """FROM {base}
LABEL harness-adapters.stand-in="{kind}"
USER root
RUN ln -sf /usr/bin/python3 /usr/local/bin/python \\
    && if [ -x /usr/bin/pip3 ]; then ln -sf /usr/bin/pip3 /usr/local/bin/pip; fi \\
    && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
CMD ["python3"]
"""
_DEBIAN_LAYER = """FROM {base}
LABEL harness-adapters.stand-in="{kind}"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
CMD ["bash"]
"""


def from_images(dockerfile: str) -> list[str]:
    """The images the Dockerfile's stages start from, in order, without stage names, ``scratch`` and
    references built from ``ARG``s (those cannot be known before the build)."""
    stages: set[str] = set()
    images: list[str] = []
    for line in dockerfile.splitlines():
        found = _FROM.match(line)
        if not found:
            continue
        ref, rest = found.group(2), found.group(3)
        if ref.lower() not in stages and ref != "scratch" and "$" not in ref and ref not in images:
            images.append(ref)
        alias = _AS.match(rest)
        if alias:
            stages.add(alias.group(1).lower())
    return images


def stand_in_kind(ref: str) -> str | None:
    """Which local stand-in can replace ``ref`` (an official image, with or without ``docker.io/library/``),
    or None."""
    name = re.sub(r"^(docker\.io/)?(library/)?", "", ref)
    return next((kind for kind, pattern in _STAND_INS.items() if pattern.fullmatch(name)), None)


def stand_in_tag(kind: str, base_id: str) -> str:
    """Keyed by the base image's id as well: a rebuilt base gets new stand-ins."""
    return f"{STAND_IN_REPO}:{kind}-{base_id.removeprefix('sha256:')[:12]}"


def stand_in_dockerfile(kind: str, base: str = DEBIAN_BASE) -> str:
    layer = _PYTHON_LAYER if kind.startswith("python") else _DEBIAN_LAYER
    return layer.format(base=base, kind=kind)


def with_images(dockerfile: str, replaced: dict[str, str]) -> str:
    """The Dockerfile with each ``FROM`` image in ``replaced`` swapped for its replacement (flags, stage
    names and every other line kept as written)."""
    lines = []
    for line in dockerfile.splitlines(keepends=True):
        found = _FROM.match(line.rstrip("\n"))
        if found and found.group(2) in replaced:
            newline = "\n" if line.endswith("\n") else ""
            line = f"{found.group(1)}{replaced[found.group(2)]}{found.group(3)}{newline}"
        lines.append(line)
    return "".join(lines)


def missing_message(refs: list[str]) -> str:
    """Why a build cannot start, and the fix."""
    return (
        f"its FROM image(s) {', '.join(refs)} are not in the Docker engine and have no local stand-in "
        "(python:3.11*, debian:bookworm*); on a machine that reaches a registry: docker pull "
        f"{refs[0]}; elsewhere: docker save it on one that does, then docker load -i <file> here"
    )


HOST_CA = ".harness-adapters-host-ca.pem"
"""The host's CA bundle, added to a task's build context when the build has network."""
_HOST_CA_INSIDE = "/etc/ssl/certs/harness-adapters-host-ca.pem"
_CA_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def host_ca_bundle() -> bytes | None:
    """The certificates this machine trusts for TLS (``SSL_CERT_FILE`` if set, else OpenSSL's default
    bundle), or None when there is none to read. A machine that reaches package registries through a proxy
    with its own certificate trusts it only here; a build that runs ``pip install`` needs the same."""
    import os
    import ssl

    paths = ssl.get_default_verify_paths()
    for path in (os.environ.get("SSL_CERT_FILE"), paths.cafile, paths.openssl_cafile):
        if path and os.path.isfile(path):
            with open(path, "rb") as handle:
                return handle.read()
    return None


def with_host_trust(dockerfile: str) -> str:
    """The Dockerfile with the host's CA bundle (``HOST_CA`` in the context) copied into every stage that
    starts from an image, and the variables that pip, requests, curl, OpenSSL and Node read pointed at it,
    so its ``RUN`` steps trust what the host trusts."""
    lines = []
    for line in dockerfile.splitlines(keepends=True):
        lines.append(line if line.endswith("\n") else line + "\n")
        found = _FROM.match(line.rstrip("\n"))
        if found and found.group(2).lower() != "scratch":
            lines.append(f"COPY {HOST_CA} {_HOST_CA_INSIDE}\n")
            lines.append("ENV " + " ".join(f"{name}={_HOST_CA_INSIDE}" for name in _CA_VARIABLES) + "\n")
    return "".join(lines)
