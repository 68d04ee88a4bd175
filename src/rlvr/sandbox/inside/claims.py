"""Exceptions across the boundary: what the candidate child says about an exception its program
raised (``claim``), and what the test child builds from what it says (``rebuild``). In the inside
package (standard library only, see its ``__init__``): both children import it.

The rule: nothing the candidate reports about itself decides more than an honest program could
achieve. Whatever ``claim`` computes runs in the candidate's process, which the program owns (it
can patch this module, or write any bytes on the pipe), so the test child trusts none of it
beyond what an honest program could have made it say:

- The claim lists the exception's whole MRO, each class by its builtin name when it *is* that
  builtin class (identity against a table taken before the program ran, never its
  ``__name__`` or ``__module__``, which a class of the program may set to ``ValueError`` and
  ``builtins``) and ``None`` otherwise. The test child checks it against a closed whitelist,
  its own ``builtins``: a claim whose named classes are not builtin exception classes, or whose
  MRO is all builtin names but is not exactly that builtin class's MRO, ends the sample (the
  candidate broke the protocol).
- **The real builtin class** reaches the test only when every class of the MRO is builtin, its
  arguments are plain data, it carries no state beyond them (no ``__dict__``, notes,
  ``AttributeError.obj``) and the class rebuilt from them (``cls(*args, **kw)``) has the
  claimed ``str`` and ``repr``. Then it is exact: any honest program raising that exception
  gives the test the same object.
- **Its chain** (``__cause__``, ``__context__``, ``__suppress_context__``) is part of the claim:
  every exception reachable through it is described by the same rule (each is exact or a
  stand-in on its own), numbered so that one exception reached twice is one object in the test.
  A chain longer than ``MAX_CHAIN`` makes the exception a stand-in whose chain is refused.
  The test child adds what CPython adds at the raise: the test's own exception being handled
  becomes a context, so a chained claim is refused when the test calls the program while
  handling one (``proxy.Link``).
- **Anything else** arrives as an *opaque* exception: an instance of a class built here whose
  builtin bases are exactly the builtin classes of the claimed MRO (``class E(KeyError,
  ValueError)`` is caught by ``except KeyError`` and ``except ValueError``, never narrowed to
  one), named as the program's class. ``except``, ``isinstance`` and ``issubclass`` against a
  builtin class answer as in CPython (the interpreter reads the bases at C level); ``str``,
  ``repr`` and ``args`` are what the program's own ``__str__``, ``__repr__`` and ``args`` said
  (refused where they raised or were not plain data), and its chain as claimed; every other
  attribute, ``__class__``,
  comparison, hashing and setting an attribute end the sample ``unsupported``, as does
  ``type(e)`` in the test when the exception stands for an exact builtin class (CPython would
  say ``type(e) is ValueError``; here the class is a stand-in).

So a program that lies in its claim can at most make the test see an exception an honest
program could have raised: a builtin exception with plain arguments, or a subclass of builtin
exceptions with a name, a message and a repr of its choosing.
"""

from __future__ import annotations

import builtins
import decimal
import fractions
from collections.abc import Callable
from typing import Any, NoReturn

from .sharing import is_a

MAX_TEXT = 1 << 20  # characters of a message or repr; a longer one is refused where it is read
MAX_MRO = 64
# Keyword-only attributes of builtin exceptions, set by the interpreter (``import x`` sets
# ImportError.name; a failed attribute lookup sets AttributeError.name and .obj).
KW_ATTRS = ("name", "path")
_KW_CLASSES = (ImportError, NameError, AttributeError)
# Taken when this module is imported, before any program runs in this process.
_BUILTIN: dict[int, tuple[type, str]] = {id(v): (v, k) for k, v in vars(builtins).items() if isinstance(v, type)}
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_NAMES = (type.__dict__["__name__"], type.__dict__["__qualname__"], type.__dict__["__module__"])
_EXC_DICT = BaseException.__dict__["__dict__"]
_EXC_ARGS = BaseException.__dict__["args"]
_CAUSE = BaseException.__dict__["__cause__"]
_CONTEXT = BaseException.__dict__["__context__"]
_SUPPRESS = BaseException.__dict__["__suppress_context__"]
MAX_CHAIN = 32  # exceptions in one chain (cause and context links); a longer one is not carried
_CHAIN_ATTRS = frozenset({"__cause__", "__context__", "__suppress_context__"})


def builtin_name(c: Any) -> str | None:
    """The name of ``c`` in ``builtins`` when ``c`` is that very class, else None."""
    entry = _BUILTIN.get(id(c))
    return entry[1] if entry is not None and entry[0] is c else None


# -- the candidate's side ---------------------------------------------------------------------------
def claim(exc: BaseException, plain: Callable[[Any], Any]) -> list[Any]:
    """``["exc", mro, message, args, [name, qualname, module], repr, kw, extra, links, wiring]``:
    the honest description of ``exc`` and of its chain. ``links`` are the claims (the first eight
    items) of every exception reachable through ``__cause__`` and ``__context__``, each once
    (``exc`` is number 0, the links 1, 2, ...); ``wiring[i]`` is ``[cause, context, suppress]``
    of exception ``i`` (numbers or None, ``__suppress_context__``), so the same exception
    reached twice (``raise X from e`` inside ``except E as e``) is one object in the test. A
    chain of more than ``MAX_CHAIN`` exceptions is not carried (``links`` and ``wiring`` None,
    ``extra`` true). ``plain(x)`` encodes plain data and raises on anything else."""
    order, wiring = [exc], []
    index = {id(exc): 0}
    whole = True
    i = 0
    while i < len(order) and whole:
        e = order[i]
        refs: list[Any] = []
        for d in (_CAUSE, _CONTEXT):
            c = d.__get__(e)  # the interpreter's fields, not the program's attributes
            if c is None:
                refs.append(None)
            elif id(c) in index:
                refs.append(index[id(c)])
            elif len(order) < MAX_CHAIN:
                index[id(c)] = len(order)
                order.append(c)
                refs.append(index[id(c)])
            else:
                whole = False
        wiring.append([*refs, bool(_SUPPRESS.__get__(e))])
        i += 1
    top = _one(exc, plain)
    if not whole:
        return [*top[:7], True, None, None]
    return [*top, [_one(e, plain) for e in order[1:]], wiring]


def _one(exc: BaseException, plain: Callable[[Any], Any]) -> list[Any]:
    """``exc`` alone (the first eight items of ``claim``); its chain is wired by ``claim``."""
    t = type(exc)
    try:
        mro = [builtin_name(c) for c in _TYPE_MRO.__get__(t)][:MAX_MRO]
    except BaseException:  # noqa: BLE001 - a class that breaks its MRO: nothing builtin about it
        mro = [None, "BaseException", "object"]
    whole = all(n is not None for n in mro)
    try:
        names = [str.__str__(d.__get__(t))[:200] for d in _TYPE_NAMES]
    except BaseException:  # noqa: BLE001
        names = ["Exception", "Exception", "builtins"]
    try:  # through the class, as the test would read it (a property of the program's included)
        raw = exc.args if not whole else _EXC_ARGS.__get__(exc)
        args: Any = [plain(a) for a in tuple.__iter__(raw)] if is_a(raw, tuple) else None
    except BaseException:  # noqa: BLE001
        args = None
    kw: list[list[Any]] = []
    extra = not whole
    if whole:
        try:
            extra = bool(_EXC_DICT.__get__(exc))
            if is_a(exc, _KW_CLASSES):
                for a in KW_ATTRS:
                    v = getattr(exc, a, None)
                    if v is not None:
                        kw.append([a, str.__str__(v) if is_a(v, str) else plain(v)])
                extra = extra or getattr(exc, "obj", None) is not None
        except BaseException:  # noqa: BLE001
            extra = True
    return ["exc", mro, _text(str, exc), args, names, _text(repr, exc), kw, extra]


def _text(fn: Callable[[Any], str], exc: BaseException) -> str | None:
    try:
        s = str.__str__(fn(exc))
    except BaseException:  # noqa: BLE001 - refused where the test reads it
        return None
    return s if len(s) <= MAX_TEXT else None


# -- the test child's side --------------------------------------------------------------------------
class Refuse:
    """What ``rebuild`` needs of the test child: ``refuse(what)`` ends the sample
    ``unsupported``, ``gone(why)`` ends it as the candidate's fault, ``quiet()`` says a failure
    report is being made (then nothing is refused: ``Quiet`` is raised instead), ``dec(x)``
    decodes a value."""

    def __init__(
        self,
        refuse: Callable[[str], NoReturn],
        gone: Callable[[str], NoReturn],
        quiet: Callable[[], bool],
        quiet_exc: type[Exception],
    ) -> None:
        self.refuse, self.gone, self.quiet, self.quiet_exc = refuse, gone, quiet, quiet_exc


SIDE: Refuse | None = None  # set by the test child (proxy.Link)
_EXC_NAMES = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}
_ALLOWED = frozenset({"with_traceback"})  # unittest's assertRaises calls it (it sets no state we read)
_CLASS_ALLOWED = frozenset({"__name__", "__qualname__", "__module__"})


def _stop(what: str) -> NoReturn:
    side = SIDE
    if side is None:
        raise RuntimeError(what)
    if side.quiet():
        raise side.quiet_exc
    side.refuse(what)


class _OpaqueMeta(type):
    def __getattribute__(cls, name: str) -> Any:
        if name in _CLASS_ALLOWED or name.startswith("_rlvr"):
            return type.__getattribute__(cls, name)
        _stop(f"the test reads {name!r} of the program's exception class {type.__getattribute__(cls, '__name__')}")


class _Opaque(metaclass=_OpaqueMeta):
    """The mixin of every opaque exception class (see the module docstring)."""

    __slots__ = ()
    _rlvr_exact = False  # stands for an exact builtin class (then type(e) is refused)

    def __getattribute__(self, name: str) -> Any:
        if name in _ALLOWED:
            return BaseException.__getattribute__(self, name)  # type: ignore[arg-type]
        if name == "args":
            data = object.__getattribute__(self, "__dict__").get("_rlvr_args")
            if data is not None:
                return data
        if name in _CHAIN_ATTRS and object.__getattribute__(self, "__dict__").get("_rlvr_chain"):
            return BaseException.__getattribute__(self, name)  # type: ignore[arg-type]
        _stop(
            f"the test reads {name!r} of an exception of the program ({_cls_name(self)}), which does not cross exactly"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        _stop(f"the test sets {name!r} on an exception of the program ({_cls_name(self)})")

    def __delattr__(self, name: str) -> None:
        _stop(f"the test deletes {name!r} of an exception of the program ({_cls_name(self)})")

    def __str__(self) -> str:
        return _opaque_text(self, "_rlvr_str", "str")

    def __repr__(self) -> str:
        return _opaque_text(self, "_rlvr_repr", "repr")

    def __eq__(self, other: object) -> bool:
        _stop(f"the test compares an exception of the program ({_cls_name(self)})")

    def __ne__(self, other: object) -> bool:
        _stop(f"the test compares an exception of the program ({_cls_name(self)})")

    def __hash__(self) -> int:
        _stop(f"the test hashes an exception of the program ({_cls_name(self)})")


def _opaque_text(exc: Any, key: str, what: str) -> str:
    text = object.__getattribute__(exc, "__dict__").get(key)
    if type(text) is not str:
        _stop(f"the test asks {what}() of an exception of the program ({_cls_name(exc)}) that did not cross")
    return text


def _cls_name(x: Any) -> str:
    return str(type.__getattribute__(type(x), "__name__"))


_CLASSES: dict[tuple[Any, ...], type] = {}


def _opaque_class(bases: list[str], names: list[str], exact: bool) -> type | None:
    """A class whose builtin bases are exactly ``bases`` (builtin names, in MRO order), named
    ``names``; None when no class can have them (a layout conflict)."""
    key = (tuple(bases), tuple(names), exact)
    cls = _CLASSES.get(key)
    if cls is not None:
        return cls
    classes = [_EXC_NAMES[n] for n in bases if n != "object"]
    leaves = tuple(c for c in classes if not any(o is not c and issubclass(o, c) for o in classes))
    try:
        cls = _OpaqueMeta(names[0], (_Opaque, *leaves), {"__slots__": (), "_rlvr_exact": exact})
    except TypeError:
        return None
    type.__setattr__(cls, "__qualname__", names[1])
    type.__setattr__(cls, "__module__", names[2])
    have = {builtin_name(c) for c in _TYPE_MRO.__get__(cls)} - {None}
    if have != set(bases):
        return None
    if len(_CLASSES) < 256:
        _CLASSES[key] = cls
    return cls


def rebuild(ans: list[Any], dec: Callable[[Any], Any]) -> BaseException:
    """The candidate's claim (``claim``'s list) as the exception the test sees (see the module
    docstring), its chain included: each exception of it is a claim rebuilt by the same rule,
    and ``__cause__``, ``__context__`` and ``__suppress_context__`` are set as claimed (one
    object per number). Needs ``SIDE``."""
    side = SIDE
    assert side is not None
    if len(ans) != 10:
        side.gone("the candidate's process sent a malformed exception")
    links, wiring = ans[8], ans[9]
    if links is None and wiring is None:
        if ans[7] is not True:
            side.gone("the candidate's process sent a malformed exception chain")
        return _rebuild_one(ans[:8], dec)  # not carried: an opaque stand-in, its chain refused
    if (
        type(links) is not list
        or type(wiring) is not list
        or len(wiring) != len(links) + 1
        or len(wiring) > MAX_CHAIN
        or not all(_wire_ok(w, len(wiring)) for w in wiring)
    ):
        side.gone("the candidate's process sent a malformed exception chain")
    excs = [_rebuild_one(ans[:8], dec), *[_rebuild_one(link, dec) for link in links]]
    for exc, (cause, context, suppress) in zip(excs, wiring, strict=True):
        _CAUSE.__set__(exc, excs[cause] if cause is not None else None)
        _CONTEXT.__set__(exc, excs[context] if context is not None else None)
        _SUPPRESS.__set__(exc, suppress)
        if isinstance(exc, _Opaque):
            object.__getattribute__(exc, "__dict__")["_rlvr_chain"] = True
    return excs[0]


def _wire_ok(w: Any, n: int) -> bool:
    return (
        type(w) is list
        and len(w) == 3
        and all(r is None or (type(r) is int and 0 <= r < n) for r in w[:2])
        and type(w[2]) is bool
    )


def chained(exc: BaseException) -> bool:
    """Does ``exc`` (a rebuilt claim) carry a cause or a context?"""
    return _CAUSE.__get__(exc) is not None or _CONTEXT.__get__(exc) is not None


def _rebuild_one(ans: Any, dec: Callable[[Any], Any]) -> BaseException:
    side = SIDE
    assert side is not None
    if (
        type(ans) is not list
        or len(ans) != 8
        or type(ans[1]) is not list
        or not 2 <= len(ans[1]) <= MAX_MRO
        or ans[1][-1] != "object"
    ):
        side.gone("the candidate's process sent a malformed exception")
    mro, message, args, names, shown, kw, extra = ans[1:8]
    if not all(n is None or (type(n) is str and (n == "object" or n in _EXC_NAMES)) for n in mro):
        side.gone("the candidate's process named a class that is not a builtin exception")
    if type(names) is not list or len(names) != 3 or not all(type(n) is str and len(n) <= 200 for n in names):
        side.gone("the candidate's process sent a malformed exception name")
    texts = [t if type(t) is str and len(t) <= MAX_TEXT else None for t in (message, shown)]
    values = [dec(a) for a in args] if type(args) is list else None
    whole = mro[0] is not None
    if whole:
        cls = _EXC_NAMES[mro[0]]
        if [builtin_name(c) for c in cls.__mro__] != mro or None in mro:
            side.gone("the candidate's process sent an MRO that is not its builtin class's")
        exact = _exact(cls, values, kw, extra is not False, texts)
        if exact is not None:
            return exact
    bases = [n for n in mro if n is not None]
    opaque = _opaque_class(bases, names, whole)
    if opaque is None:
        side.refuse(f"an exception of the program with builtin bases no class here can have ({', '.join(bases)})")
    exc: BaseException = BaseException.__new__(opaque)  # type: ignore[call-overload]
    d = object.__getattribute__(exc, "__dict__")
    d["_rlvr_str"], d["_rlvr_repr"] = texts
    d["_rlvr_args"] = tuple(values) if values is not None else None
    return exc


def _exact(cls: type, values: list[Any] | None, kw: Any, extra: bool, texts: list[str | None]) -> BaseException | None:
    """``cls(*values, **kw)`` when it is exactly what the claim describes, else None."""
    if extra or values is None or type(kw) is not list:
        return None
    kwargs: dict[str, Any] = {}
    for pair in kw:
        if type(pair) is not list or len(pair) != 2 or pair[0] not in KW_ATTRS or type(pair[1]) is not str:
            return None
        kwargs[pair[0]] = pair[1]
    try:
        exc = cls(*values, **kwargs)
        same = str(exc) == texts[0] and repr(exc) == texts[1]
    except Exception:  # noqa: BLE001 - a class that wants other arguments: not exact here
        return None
    return exc if same and all(getattr(exc, k, None) == v for k, v in kwargs.items()) else None  # type: ignore[no-any-return]


# Set by the test child: (Handle, type() of one, isinstance() of one) as the program answers them.
PROXY: tuple[type, Callable[[Any], Any], Callable[[Any, Any], bool]] | None = None


def exact_isinstance(x: Any, classes: Any) -> bool:
    """``isinstance(x, classes)`` for the test file: of an object of the program (a handle), the
    program's own answer (its ``__class__`` and metaclass decide, as in CPython; refused without
    ``program_objects``), never the proxy's class's."""
    if PROXY is not None and type(x) is PROXY[0]:
        if not _askable(classes):  # an ABC of the test's (collections.abc.Sequence) would ask type(h)
            _stop("the test asks isinstance() of an object of the program against a class of its own")
        return PROXY[2](x, classes)
    return isinstance(x, classes)


def _askable(c: Any, depth: int = 0) -> bool:
    """A builtin class, a class of the program (a handle), or a tuple of those: what the program
    can be asked ``isinstance`` against."""
    if type(c) is tuple and depth < 20:
        return all(_askable(i, depth + 1) for i in c)
    return builtin_name(c) is not None or (PROXY is not None and type(c) is PROXY[0])


def exact_type(x: Any) -> Any:
    """``type(x)`` for the test file: refused for an opaque exception that stands for an exact
    builtin class (CPython would answer that class); for an object of the program (a handle),
    the program's own ``type()`` of it (``PROXY``: refused without ``program_objects``), never
    the proxy's class."""
    t = type(x)
    if PROXY is not None and t is PROXY[0]:
        return PROXY[1](x)
    _refuse_opaque(t, "type()")
    return t


def exact_class(x: Any) -> Any:
    """``x.__class__`` for the test file (``testchild.ClassReads``): of an object of the program
    (a handle), the program's own answer (an attribute read: its ``__class__`` property decides,
    as in CPython; refused without ``program_objects``), never the proxy's class; refused for an
    opaque exception as ``exact_type`` refuses; else ``x.__class__``."""
    t = type(x)
    if PROXY is not None and t is PROXY[0]:
        return PROXY[0].__getattr__(x, "__class__")
    _refuse_opaque(t, "__class__")
    return x.__class__


# Values that cross as copies: two distinct ones here may be one object in the program.
_SCALARS = (int, float, complex, str, bytes, fractions.Fraction, decimal.Decimal)
_VALUES = (*_SCALARS, tuple, frozenset, range)


def exact_is(a: Any, b: Any) -> bool:
    """``a is b`` for the test file (``testchild.IdentityCompares``). One object here is one object
    in CPython (handles, shared containers, NaNs, singletons and classes cross by identity); two
    objects of different types, or unequal values, are two there too. Two equal values that
    cross as copies (a number, string or tuple the program holds and returns twice, or an
    argument it returns) may be one object in the program, so CPython's answer is not known here:
    refused."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b) or t is bool or not issubclass(t, _VALUES):
        return False
    if issubclass(t, _SCALARS):
        if not a == b:  # distinct values (NaNs included: one NaN object here is one there)
            return False
    elif issubclass(t, (tuple, frozenset, range)) and len(a) != len(b):
        return False
    _stop(f"the test compares two equal {t.__name__} values by identity: they crossed as copies")


def _refuse_opaque(t: type, what: str) -> None:
    if issubclass(t, _Opaque) and type.__getattribute__(t, "_rlvr_exact"):
        _stop(f"the test asks {what} of a {type.__getattribute__(t, '__name__')} that did not cross exactly")
