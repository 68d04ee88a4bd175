"""The data format between the test child and the candidate child: values as tagged JSON, and
length-prefixed frames, used by both children (the inside package: standard library only, see
its ``__init__``).

Scalars travel as JSON scalars (``int`` within 63 bits, ``float`` including NaN and infinities,
``str``, ``bool``, ``None``); every container is a list whose first item is a tag, so nothing is
ambiguous: ``["l", ...]`` list, ``["t", ...]`` tuple, ``["s"|"f", ...]`` set / frozenset,
``["d", k, v, ...]`` dict, ``["b"|"B", hex]`` bytes / bytearray, ``["c", re, im]`` complex,
``["i", hex]`` a big int, ``["C"|"O", k, v, ...]`` Counter / OrderedDict, ``["D", factory, k, v,
...]`` defaultdict (factory: a name in ``FACTORIES``, None, or any other value: a handle or a
callable of the test), ``["q", maxlen, ...]`` deque,
``["n", name, [fields], ...]`` a named tuple, ``["F", num, den]`` Fraction, ``["M", text]``
Decimal, ``["r", start, stop, step]`` range, ``["T", name]`` a builtin class, ``["h", n, kind,
type name]`` a handle (an object that stays in the candidate child; kind ``f`` callable, ``i``
iterator, ``c`` class, ``o`` other; ``["h", n]`` when the test child sends one back), ``["x",
n]`` a callable that stays in the test child, ``["N", k, bits]`` a NaN by identity
(``Nans``), ``["W", base, [name, qualname, module, number], value]`` a subclass of a
builtin of ``SUBCLASS_BASES`` that adds nothing (``plain_subclass``; ``number``: its class's in
the sample, so one class is one class in the test), ``["S", k, value]`` a mutable object the
program still holds (identity number ``k``: the same object answered twice is the same object
in the test; see ``child.Server.reply``). Only exact types are plain data, and those plain
subclasses: any other subclass of a builtin (its methods could answer anything) and a named
tuple class with methods of its own are not.

``decode`` is strict and bounded: it is what the test child applies to everything the candidate
child sends (see ``MAX_ITEMS``, ``MAX_DEPTH``, ``MAX_INT_HEX``); a malformed or oversized value
raises ``ValueError``. What comes out is always fresh builtins and standard containers, never an
object whose class the candidate wrote.
"""

from __future__ import annotations

import builtins
import collections
import decimal
import fractions
import math
import struct
import types
from collections.abc import Callable
from typing import Any

MAX_ITEMS = 32_000_000  # values in one answer (a 64 MiB frame holds fewer)
MAX_DEPTH = 200
MAX_INT_HEX = 16_000_000  # hex digits of one integer (64M bits; base 16 converts in linear time)
BIG = 1 << 63
FACTORIES: dict[str, Any] = {  # a defaultdict's factory by name; any other travels as a value
    "int": int,
    "float": float,
    "str": str,
    "list": list,
    "dict": dict,
    "set": set,
    "tuple": tuple,
    "bool": bool,
    "Counter": collections.Counter,
    "OrderedDict": collections.OrderedDict,
    "deque": collections.deque,
    "defaultdict": collections.defaultdict,
}
_NAMEDTUPLES: dict[tuple[str, tuple[str, ...]], Any] = {}
_MAPPINGS = {"d": dict, "C": collections.Counter, "O": collections.OrderedDict}
_SEQS = {"l": list, "t": tuple, "s": set, "f": frozenset}


class WireError(ValueError):
    """A frame or a value that breaks the format or its limits."""


class WireLimit(WireError):
    """A well-formed value beyond a limit (depth, values, frame size): the sample is
    ``unsupported``, not the program's fault."""


ALIASES: dict[int, list[Any]] = {}  # set by the candidate around a call's answer (see child.Server.call)
SHARED: dict[int, int] = {}  # id -> identity number of a shared object, set around an answer (child.Server.reply)
_ALIASABLE = (list, dict, set, bytearray, collections.deque, collections.Counter, collections.OrderedDict)


def encode(x: Any, other: Callable[[Any], list[Any]], depth: int = 0) -> Any:
    """``x`` as tagged JSON. ``other(obj)`` encodes what is not plain data (a handle). A mutable
    container below the top listed in ``ALIASES`` (a call's argument or a container in one) is
    sent as ``["A", position, *path]``: the test child's own object at that place."""
    t = type(x)
    if ALIASES and depth and t in _ALIASABLE and id(x) in ALIASES:
        return ["A", *ALIASES[id(x)]]
    if SHARED and id(x) in SHARED and (t in _ALIASABLE or _mutable_subclass(t)):
        if SUBCLASSES or REBUILT[0]:
            return ["S", SHARED[id(x)], _body(x, t, other, depth)]
        REBUILT[0] = True  # the test child's copy of the program's object, going back as itself
        try:
            return ["S", SHARED[id(x)], _body(x, t, other, depth)]
        finally:
            REBUILT[0] = False
    return _body(x, t, other, depth)


def _mutable_subclass(t: type) -> bool:
    """A plain subclass of a mutable builtin: the candidate's own (``plain_subclass``), or in the
    test child one rebuilt here (``_subclass``). Such an object is shared by identity like a
    list."""
    base = plain_subclass(t) if SUBCLASSES else _REBUILT_BASE.get(t)
    return base is not None and base in _MUTABLE_BASES


def _ident(x: Any) -> list[Any]:
    return ["?", id(x)]


def snapshot(x: Any) -> Any:
    """``x``'s whole content now (nested objects included, other objects by identity), to compare
    with a later snapshot: how each side sees that a shared object changed."""
    old, REBUILT[0] = REBUILT[0], True  # the test child's rebuilt subclasses by content too
    try:
        return encode(x, _ident)
    except (ValueError, RecursionError):
        return ["?", id(x)]
    finally:
        REBUILT[0] = old


def _body(x: Any, t: type, other: Callable[[Any], list[Any]], depth: int) -> Any:
    if t is int:
        return x if -BIG < x < BIG else ["i", format(x, "x")]
    if t is float:
        return x if x == x or NANS is None else NANS.out(x)
    if t is str or t is bool or x is None:
        return x
    if depth > MAX_DEPTH:
        raise WireLimit(f"nested more than {MAX_DEPTH} deep")
    if t is _FUNCTION:  # the usual non-plain value (a program's function), sent without the checks below
        return other(x)
    d = depth + 1
    if t is list:
        return ["l", *[encode(v, other, d) for v in x]]
    if t is tuple:
        return ["t", *[encode(v, other, d) for v in x]]
    if t is dict:
        return _pairs("d", x, other, d)
    if t is set or t is frozenset:
        return ["s" if t is set else "f", *[encode(v, other, d) for v in x]]
    if t is bytes or t is bytearray:
        return ["b" if t is bytes else "B", x.hex()]
    if t is complex:
        # A NaN part makes it unequal to itself: only identity makes [c] == [c], and a copy has
        # none (``Nans`` covers floats only), so such a value is not plain data.
        return ["c", x.real, x.imag] if x == x else other(x)
    if t is collections.Counter or t is collections.OrderedDict:
        return _pairs("C" if t is collections.Counter else "O", x, other, d)
    if t is collections.defaultdict:
        f = x.default_factory
        name = next((k for k, v in FACTORIES.items() if v is f), None)
        # Any other factory (a lambda) travels as a value: a handle the test can call, so a
        # missing key is filled by the program's own factory, as in CPython.
        return ["D", name if name is not None or f is None else encode(f, other, d), *_pairs("d", x, other, d)[1:]]
    if t is collections.deque:
        return ["q", x.maxlen, *[encode(v, other, d) for v in x]]
    if t is fractions.Fraction:
        return ["F", encode(x.numerator, other), encode(x.denominator, other)]
    if t is decimal.Decimal:
        return ["M", str(x)] if not x.is_nan() else other(x)  # as a NaN complex
    if t is range:
        return ["r", encode(x.start, other), encode(x.stop, other), encode(x.step, other)]
    if t is type and BUILTIN_TYPES.get(getattr(x, "__name__", "")) is x:
        return ["T", getattr(x, "__name__", "")]  # a builtin class is the same class in every process
    if isinstance(x, tuple) and plain_namedtuple(t):
        fields = [str(f) for f in getattr(t, "_fields", ())]
        return ["n", str(t.__name__), fields, *[encode(v, other, d) for v in tuple.__iter__(x)]]
    base = plain_subclass(t) if SUBCLASSES else _REBUILT_BASE.get(t) if REBUILT[0] else None
    if base is not None and _no_state(x) and (base is not float or x == x):
        return ["W", base.__name__, _names(t), encode(base(x), other, d)]
    # Anything else, a subclass of a builtin included (an IntEnum, a class MyList(list) whose
    # __eq__ may say anything), is not plain data: ``other`` decides (a handle, or a refusal).
    return other(x)


_FUNCTION = types.FunctionType
BUILTIN_TYPES: dict[str, type] = {n: v for n, v in vars(builtins).items() if isinstance(v, type)}
_REF_NT = collections.namedtuple("_REF_NT", "a")
_NT_ATTRS = (frozenset(vars(_REF_NT)) - {"a"}) | frozenset(
    ("__annotations__", "__orig_bases__", "__annotate__", "__annotate_func__", "__annotations_cache__")
)
_NT_CODE = {
    n: getattr(vars(_REF_NT)[n], "__func__", vars(_REF_NT)[n]).__code__
    for n in ("_make", "_replace", "__repr__", "_asdict", "__getnewargs__")
}
_PLAIN_NT: dict[type, bool] = {}


def _func(x: Any) -> Any:
    return getattr(x, "__func__", x)


def plain_namedtuple(t: type) -> bool:
    """A named tuple class exactly as ``collections.namedtuple`` / ``typing.NamedTuple`` make it
    (no method of its own, which could change what its values do): it travels as plain data."""
    if type(t) is not type:
        return False  # a metaclass of the program's could answer anything, even a dict lookup
    known = _PLAIN_NT.get(t)
    if known is None:
        fields = getattr(t, "_fields", None)
        attrs = vars(t)
        known = (
            t.__bases__ == (tuple,)
            and isinstance(fields, tuple)
            and all(type(f) is str for f in fields)
            and set(attrs) <= _NT_ATTRS | set(fields)
            and all(getattr(_func(attrs.get(n)), "__code__", None) is c for n, c in _NT_CODE.items())
        )
        if len(_PLAIN_NT) < 1024:
            _PLAIN_NT[t] = known
    return known


# A subclass of one of these that adds nothing (``class Score(int): pass``) crosses as a value of
# the same-named plain subclass, rebuilt in the test child: ``==``, arithmetic, ``repr``,
# ``isinstance(x, int)``, ``type(x).__name__`` and ``type(x) is int`` (False) all stay CPython's.
# A mutable one (``class Rows(list): pass``) crosses the same way, under the same sharing rules as
# a list (``["S", k, ["W", ...]]`` when the program still holds it): its copy in the test child is
# the program's object, by identity, as long as neither side changes it (``snapshot``).
SUBCLASS_BASES: dict[str, type] = {
    c.__name__: c for c in (int, float, complex, str, bytes, tuple, frozenset, list, dict, set, bytearray)
}
_MUTABLE_BASES = (list, dict, set, bytearray)
SUBCLASSES = False  # set by the candidate child only: the test child's rebuilt classes never go back
# True in the test child while it encodes what is not sent as a value: a snapshot, or the content
# of a shared object going back as itself (the candidate takes its own object, not the content).
REBUILT = [False]
_HARMLESS = frozenset(
    (
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__orig_bases__",
        "__firstlineno__",
        "__static_attributes__",
    )
)
_PLAIN_SUB: dict[type, type | None] = {}
_TYPE_NAMES = (type.__dict__["__name__"], type.__dict__["__qualname__"], type.__dict__["__module__"])


def plain_subclass(t: type) -> type | None:
    """The builtin base of ``t`` when ``t`` is a subclass of one of ``SUBCLASS_BASES`` that
    defines nothing (no method, attribute, slot or metaclass of its own in any class between
    them), else None."""
    if t in _PLAIN_SUB:
        return _PLAIN_SUB[t]
    base = None
    if type(t) is type:
        mro = type.__dict__["__mro__"].__get__(t)
        builtin = [c for c in mro if BUILTIN_TYPES.get(type.__dict__["__name__"].__get__(c)) is c]
        first = builtin[0] if builtin else None
        if (
            first is not None
            and SUBCLASS_BASES.get(first.__name__) is first
            and builtin == list(first.__mro__)
            and all(set(vars(c)) <= _HARMLESS or c in builtin for c in mro)
            and all(not type.__dict__["__dict__"].__get__(c).get("__slots__") for c in mro if c not in builtin)
        ):
            base = first
    if len(_PLAIN_SUB) < 1024:
        _PLAIN_SUB[t] = base
    return base


def _no_state(x: Any) -> bool:
    try:
        return not object.__getattribute__(x, "__dict__")
    except AttributeError:
        return True  # no __dict__ at all (__slots__ = ())


_CLASS_NUMBERS: dict[int, int] = {}  # the candidate's side: id(class) -> its number in this sample
_CLASSES_KEPT: list[type] = []  # ... kept alive, so an id is never reused for another class
MAX_CLASSES = 100_000  # distinct plain subclasses in one sample


def _names(t: type) -> list[Any]:
    """``[name, qualname, module, number]``: the number is the class's own in this sample, so two
    classes of the program with one name stay two classes in the test, one class stays one."""
    k = _CLASS_NUMBERS.get(id(t))
    if k is None:
        if len(_CLASSES_KEPT) >= MAX_CLASSES:
            raise WireLimit(f"more than {MAX_CLASSES} subclasses of builtins")
        k = _CLASS_NUMBERS[id(t)] = len(_CLASSES_KEPT)
        _CLASSES_KEPT.append(t)
    return [*(str.__str__(d.__get__(t))[:200] for d in _TYPE_NAMES), k]


_REBUILT: dict[tuple[str, int], type] = {}  # the test child's side: (base, number) -> the class built here
_REBUILT_BASE: dict[type, type] = {}  # each class rebuilt here -> its builtin base


def _subclass(base: str, names: Any) -> type:
    if (
        type(names) is not list
        or len(names) != 4
        or not all(type(n) is str and len(n) <= 200 for n in names[:3])
        or type(names[3]) is not int
    ):
        raise WireError("a malformed subclass")
    key = (base, names[3])
    cls = _REBUILT.get(key)
    if cls is None:
        if len(_REBUILT) >= MAX_CLASSES:
            raise WireLimit(f"more than {MAX_CLASSES} subclasses of builtins")
        cls = type(names[0], (SUBCLASS_BASES[base],), {"__module__": names[2], "__qualname__": names[1]})
        _REBUILT_BASE[cls] = SUBCLASS_BASES[base]  # kept alive: a snapshot must know it
        _REBUILT[key] = cls
    elif [cls.__name__, cls.__qualname__, cls.__module__] != names[:3]:
        raise WireLimit("a class of the program renamed after it crossed")  # refused: not exact here
    return cls


def _pairs(tag: str, x: Any, other: Callable[[Any], list[Any]], d: int) -> list[Any]:
    out: list[Any] = [tag]
    for k, v in dict.items(x):
        out.append(encode(k, other, d))
        out.append(encode(v, other, d))
    return out


class Nans:
    """NaN floats by identity. ``nan == nan`` is False, but a container compares an item with
    itself by identity first (``[math.nan] == [math.nan]`` is True in CPython, ``[float('nan')]
    == [math.nan]`` False), so a NaN travels as ``["N", k, bits]``: the same object on one side
    is the same object on the other, ``k = 0`` is each side's ``math.nan`` (one object in
    CPython, where the program and the test share the module), and its sign and payload cross
    exactly. ``step``: +1 numbers the candidate's own NaNs, -1 the test child's."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.objs: dict[int, float] = {0: math.nan}
        self.ids: dict[int, int] = {id(math.nan): 0}

    def out(self, x: float) -> list[Any]:
        k = self.ids.get(id(x))
        if k is None or self.objs.get(k) is not x:
            k = self.step * len(self.objs)
            self.objs[k], self.ids[id(x)] = x, k  # kept alive: its id is never reused
        return ["N", k, struct.pack(">d", x).hex()]

    def into(self, k: int, bits: str) -> float:
        x = self.objs.get(k)
        if x is None:
            if len(self.objs) > MAX_ITEMS:
                raise WireLimit("too many NaN objects")
            x = _nan(bits)
            self.objs[k], self.ids[id(x)] = x, k
        return x


def _nan(bits: str) -> float:
    try:
        x: float = struct.unpack(">d", bytes.fromhex(bits))[0]
    except ValueError:
        raise WireError("a malformed NaN") from None
    if x == x:
        raise WireError("a malformed NaN")
    return x


NANS: Nans | None = None  # set by each child (child.Server, proxy.Link); None in the trainer


def decode(x: Any, ref: Callable[..., Any], budget: list[int] | None = None, depth: int = 0) -> Any:
    """Tagged JSON -> fresh values. ``ref(tag, n)`` resolves ``["h", n]`` and ``["x", n]``."""
    b = budget if budget is not None else [MAX_ITEMS]
    b[0] -= 1
    if b[0] < 0:
        raise WireLimit(f"an answer of more than {MAX_ITEMS} values")
    t = type(x)
    if t is int or t is str or t is float or t is bool or x is None:
        return x
    if depth > MAX_DEPTH:
        raise WireLimit(f"an answer nested more than {MAX_DEPTH} deep")
    if t is not list or not x or type(x[0]) is not str:
        raise WireError("a malformed value")
    tag = x[0]
    d = depth + 1
    if tag in _SEQS:
        items = [decode(v, ref, b, d) for v in x[1:]]
        return _SEQS[tag](items)
    if tag in _MAPPINGS or tag == "D":
        if tag == "D":
            name = x[1] if len(x) > 1 else None
            if type(name) is list:
                factory = decode(name, ref, b, d)
                if not callable(factory):
                    raise WireError("a malformed defaultdict")
            elif name is not None and name not in FACTORIES:
                raise WireError("a malformed defaultdict")
            else:
                factory = FACTORIES.get(name) if name else None
            out: Any = collections.defaultdict(factory)
            rest = x[2:]
        else:
            out = _MAPPINGS[tag]()
            rest = x[1:]
        if len(rest) % 2:
            raise WireError("a malformed mapping")
        for i in range(0, len(rest), 2):
            out[decode(rest[i], ref, b, d)] = decode(rest[i + 1], ref, b, d)
        return out
    if tag == "x" and len(x) == 2 and type(x[1]) is int:
        return ref(tag, x[1])
    if tag == "N" and len(x) == 3 and type(x[1]) is int and type(x[2]) is str and len(x[2]) == 16:
        return NANS.into(x[1], x[2]) if NANS is not None else _nan(x[2])
    if tag == "W" and len(x) == 4 and x[1] in SUBCLASS_BASES:
        value = decode(x[3], ref, b, d)
        if type(value) is not SUBCLASS_BASES[x[1]]:
            raise WireError("a malformed subclass value")
        return _subclass(x[1], x[2])(value)
    if tag == "S" and len(x) == 3 and type(x[1]) is int:  # an object the program still holds
        return ref("S", x[1], lambda: decode(x[2], ref, b, d))
    if tag == "h" and len(x) == 4 and type(x[1]) is int and x[2] in ("f", "i", "c", "o") and type(x[3]) is str:
        return ref(tag, x[1], x[2], x[3])
    if tag == "h" and len(x) == 2 and type(x[1]) is int:  # a handle the test child sent back
        return ref(tag, x[1])
    if tag == "A" and len(x) >= 2 and type(x[1]) in (int, str):
        return ref("A", x[1], x[2:])
    if tag == "T" and len(x) == 2 and type(x[1]) is str and x[1] in BUILTIN_TYPES:
        return BUILTIN_TYPES[x[1]]
    if tag == "i" and len(x) == 2 and type(x[1]) is str and len(x[1]) <= MAX_INT_HEX:
        return int(x[1], 16)
    if tag in ("b", "B") and len(x) == 2 and type(x[1]) is str:
        return (bytes if tag == "b" else bytearray).fromhex(x[1])
    if tag == "c" and len(x) == 3 and all(type(v) in (int, float) for v in x[1:]):
        return complex(x[1], x[2])
    if tag == "q" and len(x) >= 2 and (x[1] is None or (type(x[1]) is int and x[1] >= 0)):
        return collections.deque([decode(v, ref, b, d) for v in x[2:]], x[1])
    if tag == "n" and len(x) >= 3 and type(x[1]) is str and type(x[2]) is list:
        fields = tuple(x[2])
        if len(fields) != len(x) - 3 or len(fields) > 255 or not all(type(f) is str for f in fields):
            raise WireError("a malformed named tuple")
        key = (x[1], fields)
        cls: Any = _NAMEDTUPLES.get(key)
        if cls is None:
            try:
                cls = collections.namedtuple(x[1], fields)  # type: ignore[misc,no-redef]
            except (ValueError, TypeError):
                cls = collections.namedtuple("namedtuple", [f"_{i}" for i in range(len(fields))])  # type: ignore[misc,no-redef]
            if len(_NAMEDTUPLES) < 256:
                _NAMEDTUPLES[key] = cls
        return cls(*[decode(v, ref, b, d) for v in x[3:]])
    if tag == "F" and len(x) == 3:
        num, den = decode(x[1], ref, b, d), decode(x[2], ref, b, d)
        if type(num) is not int or type(den) is not int or den == 0:
            raise WireError("a malformed Fraction")
        return fractions.Fraction(num, den)
    if tag == "M" and len(x) == 2 and type(x[1]) is str and len(x[1]) <= 10_000:
        return decimal.Decimal(x[1])
    if tag == "r" and len(x) == 4 and all(type(v) is int for v in x[1:]) and x[3] != 0:
        return range(x[1], x[2], x[3])
    raise WireError("a malformed value")
