"""A small JSON-schema check for tool arguments (stdlib only).

Covers what harness tool schemas use (captured pi/opencode/hermes requests): `type` (one or
a list), `required`, `properties`, `additionalProperties`, `items`, `enum`, `const`,
`anyOf`/`oneOf`, `minItems`/`maxItems`, `minimum`/`maximum` (and exclusive), `minLength`/
`maxLength`; a key not in `properties` fails when the schema lists properties (a second path
could ride in it). Other keywords are ignored (treated as satisfied): the rule's job is to
catch calls that don't fit the declared shape, not to re-validate every constraint the
harness will check itself.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict, Mapping),
    "array": (list, tuple),
    "null": (type(None),),
}
MAX_DEPTH = 32


def _type_ok(value: object, name: str) -> bool:
    kinds = TYPES.get(name)
    if kinds is None:
        return True
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, kinds)


def fits(value: object, schema: object, depth: int = 0) -> bool:
    """Whether `value` fits `schema`; a schema that isn't an object accepts anything."""
    if depth > MAX_DEPTH:
        return False
    if not isinstance(schema, Mapping):
        return True
    declared = schema.get("type")
    names = declared if isinstance(declared, list) else [declared] if isinstance(declared, str) else []
    if names and not any(_type_ok(value, n) for n in names):
        return False
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and not any(fits(value, o, depth + 1) for o in options):
            return False
    if isinstance(value, int | float) and not isinstance(value, bool) and not _in_range(value, schema):
        return False
    if isinstance(value, str) and not _length_ok(value, schema):
        return False
    if isinstance(value, Mapping):
        return _object_fits(value, schema, depth)
    if isinstance(value, list | tuple):
        items = schema.get("items")
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int) and len(value) < low or isinstance(high, int) and len(value) > high:
            return False
        return all(fits(v, items, depth + 1) for v in value)
    return True


def _in_range(value: float, schema: Mapping[str, object]) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    number = (int, float)
    return not (
        isinstance(low, number)
        and value < low
        or isinstance(high, number)
        and value > high
        or isinstance(xlow, number)
        and value <= xlow
        or isinstance(xhigh, number)
        and value >= xhigh
    )


def _length_ok(value: str, schema: Mapping[str, object]) -> bool:
    low, high = schema.get("minLength"), schema.get("maxLength")
    return not (isinstance(low, int) and len(value) < low or isinstance(high, int) and len(value) > high)


def _object_fits(value: Mapping[str, object], schema: Mapping[str, object], depth: int) -> bool:
    required = schema.get("required")
    if isinstance(required, list) and any(k not in value for k in required):
        return False
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            if not fits(item, properties[key], depth + 1):
                return False
        elif extra is False or (extra is True and properties and "additionalProperties" not in schema):
            return False  # a key the tool does not declare: a second path could ride in it
        elif isinstance(extra, Mapping) and not fits(item, extra, depth + 1):
            return False
    return True
