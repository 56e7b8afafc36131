"""The boundary's values: what crosses by value (and comes back equal, of the same type), what stays a
handle, and what is refused. Pure: no process is started."""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import pathlib

import pytest

from environments.integrity.isolation.wire import WireError, decode, dumps, encode, loads


class Handles:
    """An export table for the test: anything not data becomes ``{"$": "h", "id": n}``."""

    def __init__(self) -> None:
        self.objects: list[object] = []

    def export(self, value):
        self.objects.append(value)
        return {"$": "h", "side": "a", "id": len(self.objects) - 1}

    def resolve(self, data):
        return ("handle", data["id"])


def cross(value, handles: Handles | None = None):
    handles = handles or Handles()
    return decode(loads(dumps(encode(value, handles.export))), handles.resolve)


Point = collections.namedtuple("Point", "x y")


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(10**30),
        1.5,
        "tëxt\ud800",
        b"\x00\xff",
        bytearray(b"ab"),
        [1, [2]],
        (1, (2,)),
        {"a": 1, (1, 2): [3]},
        {1, 2},
        frozenset({3}),
        2 + 3j,
        decimal.Decimal("1.10"),
        fractions.Fraction(1, 3),
        datetime.date(2026, 1, 2),
        datetime.datetime(2026, 1, 2, 3, 4, 5),
        datetime.time(1, 2),
        datetime.timedelta(days=1, seconds=2),
        range(1, 9, 2),
        slice(1, None, -1),
        collections.OrderedDict(a=1),
        collections.Counter("aab"),
        collections.deque([1, 2], maxlen=3),
        pathlib.PurePosixPath("a/b"),
        datetime.timezone(datetime.timedelta(hours=2), "X"),
    ],
)
def test_data_crosses_by_value_with_its_type(value):
    back = cross(value)
    assert back == value and type(back) is type(value)


def test_special_floats_named_tuples_and_enums():
    assert repr(cross(float("nan"))) == "nan" and cross(float("-inf")) == float("-inf")
    point = cross(Point(1, 2))
    assert point == (1, 2) and point.x == 1 and type(point).__name__ == "Point"
    assert cross(Color.RED) == "red"


class Loud(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class Bag(dict):
    pass


def test_a_scalar_subclass_crosses_as_its_plain_value_and_a_container_subclass_stays_a_handle():
    back = cross(Loud("no"))
    assert type(back) is str and back == "no" and back != "yes"
    handles = Handles()
    assert cross(Bag(a=1), handles) == ("handle", 0)
    assert cross(object(), handles) == ("handle", 1)


def test_exceptions_are_rebuilt_from_their_class_name_and_args():
    back = cross(KeyError("k"))
    assert type(back) is KeyError and back.args == ("k",)
    assert type(cross(KeyboardInterrupt())).__name__ == "SolutionInterrupted"  # never stops the runner


def test_a_fixed_offset_zone_of_any_class_crosses_as_a_timezone():
    class Plus3(datetime.tzinfo):
        def utcoffset(self, dt):
            return datetime.timedelta(hours=3)

        def tzname(self, dt):
            return "P3"

    back = cross(Plus3())
    assert back == datetime.timezone(datetime.timedelta(hours=3), "P3")


@pytest.mark.parametrize(
    "data",
    [{"no": "tag"}, {"$": "unknown"}, {"$": "bytes", "v": "%%%"}, {"$": "dict", "v": [[[1], 2]]}],
)
def test_malformed_descriptions_are_refused(data):
    with pytest.raises(WireError):
        decode(data, lambda d: None)


def test_nesting_past_the_limit_is_refused_both_ways():
    deep: list = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(WireError, match="deeper"):
        encode(deep, lambda v: None)
    described: object = []
    for _ in range(300):
        described = [described]
    with pytest.raises(WireError, match="deeper"):
        decode(described, lambda d: None)
