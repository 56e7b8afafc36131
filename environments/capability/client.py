"""One chat turn against an OpenAI-compatible server (the multi-LoRA vLLM server: ``model`` names an
adapter or the base), greedy, for the capability suites."""

from __future__ import annotations

from collections.abc import Callable


def chat_generate(
    base_url: str, model: str, *, max_tokens: int = 512, timeout_s: float = 120.0
) -> Callable[[str], str]:
    """``prompt -> reply text`` for ``model`` at ``base_url`` (``.../v1``); raises on an HTTP error or a
    reply without a message, which the suite scores as that problem's failure."""
    import httpx

    client = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s)

    def generate(prompt: str) -> str:
        response = client.post(
            "/chat/completions",
            json={
                "model": model,
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens,
                "temperature": 0.0,
            },
        )
        response.raise_for_status()
        choices = response.json().get("choices") or []
        if not choices:
            raise ValueError(f"{model}: the reply has no choices")
        return str((choices[0].get("message") or {}).get("content") or "")

    return generate
