"""Use a trained adapter from your own pi, opencode or hermes: the point of the whole project.

    python -m jobs.use --harness pi --adapter artifacts/train/pi/checkpoint-200 [--guard] [--port 8765]
    python -m jobs.use --harness pi --undo
    python -m jobs.use --adapter artifacts/train/pi/checkpoint-200 --push you/pi-adapter

Serves the adapter's base model with the adapter (vLLM, multi-LoRA), optionally behind the standalone
guard (every tool call checked, blocked ones turned into a notice), and edits the harness's own config so
that starting it as usual (``pi``, ``opencode``, ``hermes``) talks to it: one provider named
``harness-adapters`` becomes the default, every other setting is kept. It prints each file it wrote and
the undo command, then serves until interrupted; the config stays until ``--undo`` puts every file back
as it was. ``--push`` uploads the adapter folder with its model card where a hub is reachable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading
from pathlib import Path

from environments.errors import UsageError, cli_main
from environments.harnesses.personal import Endpoint, apply_edits, config_edits, undo
from environments.harnesses.registry import harness_names

LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def manifest_path(harness: str) -> Path:
    from environments.tiny_model.build import cache_root

    return cache_root() / "use" / f"{harness}.json"


def adapter_settings(adapter: Path) -> tuple[str, int]:
    """(base model, LoRA rank) from the adapter's ``adapter_config.json``; a clear error if it is not one."""
    from actors.serving.adapters import adapter_problem

    problem = adapter_problem(str(adapter))
    if problem:
        raise UsageError(f"--adapter {adapter}: not an adapter folder ({problem}); pass a checkpoint folder")
    config = json.loads((adapter / "adapter_config.json").read_text())
    base, rank = config.get("base_model_name_or_path"), int(config.get("r") or 0)
    if not base:
        raise UsageError(f"{adapter}/adapter_config.json names no base model: pass --base")
    return str(base), rank


def serving_rank(rank: int) -> int:
    """The smallest ``--max-lora-rank`` vLLM accepts that holds ``rank``."""
    for allowed in LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise UsageError(
        f"LoRA rank {rank} is above the largest vLLM serves ({LORA_RANKS[-1]}): train with a smaller "
        "trainer.lora_rank"
    )


def serve_and_point(args: argparse.Namespace) -> None:
    from actors.serving import ServingConfig, VLLMServer
    from serve.standalone import guard_subprocess

    adapter = Path(args.adapter).resolve()
    base, rank = adapter_settings(adapter)
    base = args.base or base
    name = args.name or f"{args.harness}-adapter"
    work = Path(args.work_dir or manifest_path(args.harness).parent / f"{args.harness}-serving")
    work.mkdir(parents=True, exist_ok=True)
    cfg = ServingConfig(
        model=base,
        max_lora_rank=serving_rank(rank),
        max_loras=2,
        max_model_len=args.max_model_len,
        extra_args=("--enable-log-requests",),  # the log names the adapter that answered each request
    )
    server = VLLMServer(cfg, str(work), port=args.port)
    print(f"[use] serving {base} with {adapter} as '{name}' (vLLM log in {work})", flush=True)
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server.publish(name, str(adapter))
        with contextlib.ExitStack() as guard:
            url = server.url()
            if args.guard:
                guard_url, _ = guard.enter_context(guard_subprocess(url, work / "guard.log"))
                url = f"{guard_url}/v1"
                print(
                    f"[use] the guard checks every tool call in front of it (log {work / 'guard.log'})",
                    flush=True,
                )
            endpoint = Endpoint(url, name, max_tokens=args.max_tokens)
            edits = config_edits(args.harness, Path.home(), endpoint)
            apply_edits(edits, manifest_path(args.harness))
            for path in edits:
                print(f"[use] wrote {path}", flush=True)
            print(f"[use] {args.harness} now talks to {url} (model '{name}'): start it as usual", flush=True)
            print(f"[use] undo: python -m jobs.use --harness {args.harness} --undo", flush=True)
            print("[use] ready; Ctrl-C stops serving", flush=True)
            try:
                while not stop.wait(1.0):
                    pass
            except KeyboardInterrupt:
                pass
    finally:
        server.stop()
        print("[use] stopped serving; the harness config stays until --undo", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.use", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--harness", choices=harness_names())
    parser.add_argument("--adapter", help="an adapter folder the training wrote (checkpoint-<step>)")
    parser.add_argument("--base", help="the base model (default: the one named in adapter_config.json)")
    parser.add_argument("--name", help="the model name the harness will send (default: <harness>-adapter)")
    parser.add_argument("--guard", action="store_true", help="put the standalone guard in front")
    parser.add_argument("--port", type=int, default=0, help="vLLM's port (default: a free one)")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--max-model-len", type=int, default=65536)
    parser.add_argument("--work-dir", help="where the server's files and logs go")
    parser.add_argument("--undo", action="store_true", help="put the harness's config back as it was")
    parser.add_argument("--push", metavar="OWNER/NAME", help="upload the adapter folder and its model card")
    args = parser.parse_args(argv)
    if args.push:
        from actors.model_card import push

        if not args.adapter:
            parser.error("--push needs --adapter")
        print(f"[use] pushed: {push(Path(args.adapter), args.push)}")  # a PushError: one line, the fix
        return
    if not args.harness:
        parser.error(f"--harness is required ({', '.join(harness_names())})")
    if args.undo:
        try:
            for line in undo(manifest_path(args.harness)):
                print(f"[use] {line}")
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from exc
        return
    if not args.adapter:
        parser.error("--adapter is required (or --undo)")
    try:
        serve_and_point(args)
    except ValueError as exc:  # a config file of the person's that cannot be read: say which and how
        raise UsageError(str(exc)) from exc


if __name__ == "__main__":
    cli_main(main)
