"""Requests across the boundary, nested both ways, and the table of objects a side has handed out.

Either side may make a request while it waits for an answer (a test's key function called back from
the solution's code, which calls into the solution again), so ``Endpoint.request`` serves the other
side's requests until its own answer comes. A side only ever receives descriptions of values; its own
objects are reached by the other side through ``Exports`` ids, never by reference. Standard library only.
"""

from __future__ import annotations

import itertools
import threading

from .wire import Channel, ChannelClosed, WireError, decode, encode, encode_exception


class RemoteFault(Exception):
    """The other side refused a request or broke the protocol."""


class UndecodableValue(TypeError):
    """The other side's answer is well framed but is not a value this side can rebuild: that call fails,
    the conversation goes on."""


class Exports:
    """This side's objects that the other side holds handles to, by id."""

    def __init__(self, side, describe):
        self.side, self.describe = side, describe
        self.by_id, self.ids, self.counter = {}, {}, itertools.count(1)

    def export(self, value):
        key = id(value)
        number = self.ids.get(key)
        if number is None or self.by_id.get(number) is not value:
            number = next(self.counter)
            self.by_id[number], self.ids[key] = value, number
        description = {"$": "h", "side": self.side, "id": number}
        description.update(self.describe(value))
        return description

    def get(self, number):
        if type(number) is not int or number not in self.by_id:
            raise RemoteFault(f"no object {number!r} on this side")
        return self.by_id[number]


class Endpoint:
    """One side of the boundary: ``request`` sends and waits (serving nested requests meanwhile);
    ``serve`` answers one request with ``handler(message) -> value`` (an exception it raises is
    sent back as the other side's exception)."""

    def __init__(self, channel: Channel, exports: Exports, resolve, handler, deadline=lambda: None):
        self.channel, self.exports, self.resolve, self.handler = channel, exports, resolve, handler
        self.deadline = deadline
        self.counter = itertools.count(1)
        self.lock = threading.RLock()
        self.abandoned: set[int] = set()

    def encode(self, value):
        return encode(value, self.exports.export)

    def decode(self, data):
        return decode(data, self.resolve)

    def request(self, message, raw=False):
        """Send ``message``; its answer decoded (``raw``: as described), or the other side's exception.
        One conversation at a time (threads wait their turn). A request left by an exception of this
        side (not an answer) is remembered, so its late answer is dropped instead of breaking the
        protocol; a value that cannot be decoded is an ``UndecodableValue`` for this call only."""
        with self.lock:
            number = next(self.counter)
            answered = False
            try:
                self.channel.send({**message, "id": number})
                while True:
                    frame = self.channel.receive(self.deadline())
                    if type(frame) is not dict:
                        raise WireError("a frame that is not an object")
                    if "op" in frame:
                        self.send_answer(self.serve(frame))
                        continue
                    if frame.get("re") in self.abandoned:
                        self.abandoned.discard(frame.get("re"))
                        continue
                    if frame.get("re") != number:
                        raise WireError("an answer to a request that was not made")
                    answered = True
                    if "ok" in frame:
                        return frame["ok"] if raw else self._decoded(frame["ok"])
                    if "raise" in frame:
                        raise self._decoded(frame["raise"])
                    raise RemoteFault(str(frame.get("fault", "the other side refused the request"))[:500])
            finally:
                if not answered:
                    self.abandoned.add(number)

    def _decoded(self, data):
        try:
            return self.decode(data)
        except WireError as exc:
            raise UndecodableValue(str(exc)) from None

    def send_answer(self, answer):
        try:
            self.channel.send(answer)
        except WireError as exc:
            if isinstance(exc, ChannelClosed):
                raise
            self.channel.send({"re": answer.get("re"), "fault": f"the answer could not be sent: {exc}"})

    def serve(self, frame):
        number = frame.get("id")
        try:
            value = self.handler(frame)
            return {"re": number, "ok": self.encode(value)}
        except RemoteFault as exc:
            return {"re": number, "fault": str(exc)}
        except WireError as exc:
            return {"re": number, "fault": f"protocol: {exc}"}
        except BaseException as exc:  # noqa: BLE001 - the callee's exception is the caller's outcome
            try:
                return {"re": number, "raise": encode_exception(exc, self.exports.export)}
            except WireError as inner:
                return {"re": number, "fault": f"an exception that cannot cross: {inner}"}
