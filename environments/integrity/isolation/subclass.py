"""A test's class that subclasses one of the solution's classes (``class Tagged(mod.Version): ...``).

The test's class stays in the judge, with its own methods; each of its instances holds an object in the
solution's process (made by ``__init__``, so ``super().__init__(...)`` or ``Base.__init__(self, ...)`` in
the test's class makes it) and reaches it for every name the test's class does not define. That object is
of a *shadow* subclass made in the solution's process whose methods named like the test's own methods
call back into the judge (``OverrideCall``), so the solution's code calling ``self.__missing__(key)``
or ``self.getsizeof(v)`` runs the test's override, as in-process. The base class this module builds for
each solution class lists the solution class's names as forwarders, so ``super()`` finds them:
``super().total()`` calls the solution class's own method on the held object (never the shadow's
override again), ``super().parse(s)`` in a classmethod calls the solution's classmethod (which builds an
object of the solution's class, not of the test's). Equality, hashing, ordering, truth and ``str`` follow
the rules of handles (``Handle``).
"""

from __future__ import annotations

import types

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
        base = type(instance)._ha_base
        if base._ha_method_kind(self.name) == "function":  # the class's own function, on the held object
            own = base._ha_attr(self.name) if self.special else getattr(base, self.name)
            return types.MethodType(own, held)
        if self.special:
            return held._ha_attr(self.name)  # a Handle: its process, not its local class
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
        make_held(self, args, kwargs)

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


def overrides(cls) -> list[str]:
    """The methods the test's classes (above the solution class's base) define themselves."""
    names = []
    for klass in cls.__mro__:
        if klass is SolutionSubclass or SolutionSubclass not in klass.__mro__ or "_ha_base" in vars(klass):
            continue
        for name, value in vars(klass).items():
            if isinstance(value, types.FunctionType) and name not in (
                "__init__",
                "__new__",
                "__init_subclass__",
            ):
                if not name.startswith("_ha_") and name not in names:
                    names.append(name)
    return names


class OverrideCall:
    """Called back by the shadow class's method ``name`` in the solution's process with the held object:
    runs the test's method on the test's instance that holds it."""

    def __init__(self, owners, name: str):
        self.owners, self.name = owners, name

    def __call__(self, held, *args, **kwargs):
        instance = self.owners(held)
        if instance is None:
            raise TypeError("an override of the tests was called for an object they did not make")
        return getattr(instance, self.name)(*args, **kwargs)


def make_held(instance, args, kwargs) -> None:
    """Make ``instance``'s object in the solution's process: of the shadow class of its test class."""
    cls = type(instance)
    shadow = cls.__dict__.get("_ha_shadow")
    if shadow is None:
        shadow = cls._ha_base._ha_shadow_class(cls.__name__, overrides(cls))
        type.__setattr__(cls, "_ha_shadow", shadow)
    with cls._ha_base._ha_constructing(instance):
        held = shadow(*args, **kwargs)
    object.__setattr__(instance, "_ha_held", held)
    cls._ha_base._ha_own(held, instance)


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
