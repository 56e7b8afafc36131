"""SSE decoding whatever the cut, and the chunks the guard re-emits."""

from __future__ import annotations

import json
import random

from proxyutil import parse_sse, random_cuts, sse_bytes, upstream_events

from serve.sse import DONE, ChunkWriter, SSEDecoder
from serve.toolcalls import ToolCall


def _decode(pieces: list[bytes]) -> list[str]:
    decoder = SSEDecoder()
    out = [event for piece in pieces for event in decoder.feed(piece)]
    return out + decoder.close()


def test_any_cut_gives_the_same_events():
    data = sse_bytes(upstream_events())
    whole = _decode([data])
    assert whole[-1] == "[DONE]" and len(whole) == len(upstream_events()) + 1
    rng = random.Random(7)
    for _ in range(200):
        assert _decode(random_cuts(data, rng)) == whole


def test_crlf_cr_comments_and_multiline_data():
    data = b': keep-alive\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: x\rdata: [DONE]\r\r'
    assert _decode([data]) == ['{"a":\n1}', "[DONE]"]
    assert _decode([bytes([b]) for b in data]) == ['{"a":\n1}', "[DONE]"]


def test_a_last_event_without_blank_line_is_kept_on_close():
    assert _decode([b"data: x"]) == ["x"]


def test_chunk_writer_builds_a_well_formed_stream():
    writer = ChunkWriter("id1", 5, "m")
    data = b"".join(
        [
            writer.role(),
            writer.text(0, "hi"),
            *writer.tool_calls(0, [ToolCall(0, 3, "c", "bash", "{}")]),
            writer.finish(0, "tool_calls"),
            writer.usage({"total_tokens": 1}),
            DONE,
        ]
    )
    events = parse_sse(data)
    assert events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    call = events[2]["choices"][0]["delta"]["tool_calls"][0]
    assert call == {
        "index": 0,
        "id": "c",
        "type": "function",
        "function": {"name": "bash", "arguments": "{}"},
    }
    assert events[3]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[4]["choices"] == [] and events[4]["usage"] == {"total_tokens": 1}
    assert all(e["id"] == "id1" and e["model"] == "m" for e in events[:-1])
    assert json.loads(writer.error("m", "t", "c")[6:]) == {
        "error": {"message": "m", "type": "t", "code": "c"}
    }


def test_the_fast_text_chunk_equals_the_generic_delta():
    writer = ChunkWriter('id "q"', 7, "módel\n")
    for text in ("plain", 'quote " and \\ back', "ünïcödé ✓ \u2028", "\x00\x1f"):
        assert writer.text(2, text) == writer.delta(2, {"content": text})


def test_utf8_split_across_reads_stays_whole():
    events = upstream_events(text="naïve café ✓ 日本語 😀 done")
    data = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)
    whole = _decode([data])
    assert "😀" in "".join(whole) and "\ufffd" not in "".join(whole)
    rng = random.Random(11)
    for _ in range(200):
        assert _decode(random_cuts(data, rng)) == whole


def test_an_oversized_event_is_refused():
    decoder = SSEDecoder(max_event_bytes=100)
    try:
        decoder.feed(b"data: " + b"x" * 200)
    except ValueError as exc:
        assert str(exc) == "sse_event_too_large"
    else:
        raise AssertionError("no error")
