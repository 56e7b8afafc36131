"""A test's class that subclasses one of the solution's classes (``class Tagged(mod.Version): ...``).

The test's class stays in the judge, with its own methods; each of its instances holds an instance of the
solution's class in the solution's process (made by ``__init__``, so ``super().__init__(...)`` in the test's
class makes it) and reaches it for every name the test's class does not define. The base class this
module builds for each solution class lists the solution class's names as forwarders, so ``super()``
finds them: ``super().parse(s)`` in a classmethod calls the solution's classmethod (which builds an
object of the solution's class, not of the test's), ``super().total()`` calls the method on the held
instance. The solution's code never calls the test's overrides: an instance is two objects, one in
each process. Equality, hashing, ordering, truth and ``str`` follow the rules of handles (``Handle``).
"""

from __future__ import annotations

FORWARDED_DUNDERS = frozenset(
    (
        "__call__ __getitem__ __setitem__ __delitem__ __contains__ __len__ __iter__ __next__ __reversed__ "
        "__enter__ __exit__ __add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ __matmul__ "
        "__lshift__ __rshift__ __and__ __or__ __xor__ __neg__ __pos__ __abs__ __invert__ __index__ "
        "__int__ __float__ __complex__ __round__"
    ).split()
)
"""Special methods of the solution's class a test's subclass inherits (the protocols a handle forwards);
equality, hashing, ordering, truth, ``str`` and ``repr`` stay the judge's."""


class _Forward:
    """A name of the solution's class: on the class, the solution class's attribute; on an instance, the
    held instance's."""

    def __init__(self, name: str, special: bool):
        self.name = name
        self.special = special

    def __get__(self, instance, owner=None):
        if instance is None:
            return getattr(owner._ha_base, self.name)
        held = held_instance(instance)
        if self.special:
            return held._ha_special(self.name)  # a Handle: its process, not its local class
        return getattr(held, self.name)


class SolutionSubclassMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__") or name.startswith("_ha_"):
            raise AttributeError(name)
        return getattr(cls._ha_base, name)


class SolutionSubclass(metaclass=SolutionSubclassMeta):
    """The judge-side base of a test's subclass of a solution class (see the module docstring)."""

    _ha_base = None

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_ha_held", type(self)._ha_base(*args, **kwargs))

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name.startswith("_ha_"):
            raise AttributeError(name)
        return getattr(held_instance(self), name)

    def __eq__(self, other):
        if other is self:
            return True
        if SolutionSubclass in type(other).__mro__:
            other = held_instance(other)
        return held_instance(self) == other

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(held_instance(self))

    def __bool__(self):
        return bool(held_instance(self))

    def __repr__(self):
        return f"<{type(self).__qualname__} over {held_instance(self)!r}>"

    __str__ = __repr__


def held_instance(instance):
    """The solution's object behind an instance of a test's subclass."""
    try:
        return object.__getattribute__(instance, "_ha_held")
    except AttributeError:
        raise TypeError(
            f"{type(instance).__qualname__}.__init__ did not call the solution class's __init__ "
            "(super().__init__(...)), so the instance has no object in the solution's process"
        ) from None


def subclass_base(handle, names) -> type:
    """The base class standing for the solution's class ``handle`` in a test's class statement; ``names``
    are the class's attribute names (``dir``)."""
    namespace = {"_ha_base": handle, "__module__": __name__}
    for name in names:
        if not isinstance(name, str):
            continue
        if name in FORWARDED_DUNDERS:
            namespace[name] = _Forward(name, special=True)
        elif not name.startswith("_"):
            namespace[name] = _Forward(name, special=False)
    title = str(getattr(handle, "__name__", None) or "SolutionClass")
    return SolutionSubclassMeta(
        title if title.isidentifier() else "SolutionClass", (SolutionSubclass,), namespace
    )
