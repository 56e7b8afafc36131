"""`python -m serve --upstream URL --port P`: the guard in front of any OpenAI-compatible server.

Standalone use, outside training (no Ray): point an agent at `http://HOST:P/v1` (one session per
API key) or `http://HOST:P/s/<id>/v1` (one session per id). Blocks are logged with rule and reason.
"""

from __future__ import annotations

import argparse
import logging

from environments.errors import UsageError, cli_main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m serve", description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="OpenAI base URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--upstream-api-key", default=None, help="bearer token for the upstream server")
    parser.add_argument(
        "--allow-unknown", action="store_true", help="let calls the rules can't judge through"
    )
    parser.add_argument(
        "--guard",
        choices=("enforce", "monitor", "off"),
        default="enforce",
        help="enforce: blocked calls become notices; monitor: record would-be blocks, block nothing; off",
    )
    parser.add_argument(
        "--constrain-tool-calls",
        metavar="PARSER",
        default=None,
        help="decode every tool call under the declared tools' grammar, in this tool-call parser's format "
        "(hermes; the upstream must be vLLM)",
    )
    parser.add_argument(
        "--access-log", action="store_true", help="log every HTTP request (uvicorn's access log)"
    )
    args = parser.parse_args(argv)

    import uvicorn

    from .proxy import GuardProxy, ProxyConfig, default_client

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per upstream call otherwise
    try:
        config = ProxyConfig(
            args.upstream,
            auto_open=True,
            upstream_api_key=args.upstream_api_key,
            fail_closed=not args.allow_unknown,
            guard=args.guard,
            tool_grammar=args.constrain_tool_calls,
        )
    except ValueError as exc:  # the message names the argument's value and the fix
        raise UsageError(str(exc)) from exc
    proxy = GuardProxy(config, default_client())
    uvicorn.run(proxy.app(), host=args.host, port=args.port, log_level="info", access_log=args.access_log)


if __name__ == "__main__":
    cli_main(main)
