"""One registry mechanism for every plug-in family: names → objects, plus entry points.

Each family (policies, trace formats, throughput models, estimators, overhead presets,
placements) owns one `Registry`. Built-in entries are added in code (`register`/`add`);
a family may load its built-in modules lazily, on the first lookup, through a `loader`, or
declare an entry by name with `add_lazy(name, "module:attribute")`, so that its name is known
(listed, checked, offered in `--help`) before its module, and what that imports, is loaded.
Third-party packages add entries through the family's entry-point group, for example
``mypolicy = mypkg.module:MyPolicy`` under ``dlsched.policies``; those are loaded on the
first lookup too.

An entry may have *aliases* (`alias`, or ``register(name, *aliases)``): other names that
resolve to the same entry, so that a renamed entry keeps its old name working. `get`,
``in``, iteration and `names()` know every name, aliases included (so that a check like
``name in registry.names()`` keeps accepting an old name); `names(aliases=False)` lists each
entry once, by its own name, and `aliases(name)` / `canonical(name)` tell one from the other.

Name clashes are never silent:

- registering in code a name that already belongs to a *different* object raises
  `ValueError` naming both objects (registering the same object twice is a no-op);
- an entry point whose name is already taken is skipped with a `PluginWarning` naming the
  plugin and the current owner of the name (built-ins and code win over plugins);
- an entry point that cannot be loaded (missing module, error on import) is skipped with a
  `PluginWarning` naming the plugin and its error; every other entry still works.

>>> colours = Registry("colour")
>>> _ = colours.add("red", "#f00")
>>> colours.get("red"), "red" in colours, colours.names()
('#f00', True, ['red'])
>>> colours.get("rde")
Traceback (most recent call last):
...
dlsched.registry.UnknownNameError: unknown colour 'rde' (did you mean 'red'?); registered: red
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import math
import numbers
import re
import sys
import threading
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from dlsched.errors import DlschedError, did_you_mean

T = TypeVar("T")


class UnknownNameError(DlschedError, ValueError, KeyError):
    """A name that no entry of a registry has. Both a `ValueError` and, so that a registry
    can be indexed like a mapping, a `KeyError`."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class PluginWarning(UserWarning):
    """An entry-point plugin was skipped: it failed to load, or its name was taken."""


def _describe(obj: object) -> str:
    if isinstance(obj, _Deferred):
        return obj.target.replace(":", ".")
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return repr(obj)


class _Deferred:
    """An entry declared by ``module:attribute``, imported on its first lookup."""

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def load(self) -> Any:
        module, _, attribute = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attribute.split("."):
            obj = getattr(obj, part)
        return obj


def _target(obj: object) -> str:
    """``module:qualname`` of `obj`, as `add_lazy` spells a target."""
    return f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}"


class Registry(Generic[T]):
    """Names → objects of one plug-in family (`family` names it in messages).

    `entry_point_group`: the entry-point group whose plugins join the registry on the first
    lookup. `loader`: called once, on the first lookup, to import the family's built-in
    modules (which register themselves); it runs before the entry points are read, so
    built-ins take precedence over plugins.

    Lookups (`get`, `names`, `in`, iteration, ``registry[name]``) see every entry; iteration
    yields the names, sorted, so a registry can stand where a tuple of names or a dict keyed
    by name was used.
    """

    def __init__(
        self,
        family: str,
        entry_point_group: str | None = None,
        loader: Callable[[], None] | None = None,
    ) -> None:
        self.family = family
        self.entry_point_group = entry_point_group
        self._loader = loader
        self._entries: dict[str, T | _Deferred] = {}
        self._aliases: dict[str, str] = {}  # alias -> the entry's own name
        self._loaded = loader is None and entry_point_group is None
        self._loading = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, entry_point_group={self.entry_point_group!r})"

    # -- adding -------------------------------------------------------------------------

    def add(self, name: str, obj: T) -> T:
        """Register `obj` as `name` and return it.

        Raises ValueError if `name` already belongs to a different object.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.family} name must be a non-empty string, got {name!r}")
        with self._lock:
            self._refuse_alias(name)
            existing = self._entries.get(name, obj)
            if isinstance(existing, _Deferred) and existing.target == _target(obj):
                existing = obj  # the object a lazy entry names, registered by its module
            if existing is not obj:
                raise ValueError(
                    f"{self.family} name {name!r} is already registered to "
                    f"{_describe(existing)}; cannot register {_describe(obj)} under it "
                    "(choose another name)"
                )
            self._entries[name] = obj
        return obj

    def add_lazy(self, name: str, target: str) -> None:
        """Register as `name` the object at `target` (``"package.module:attribute"``), imported
        on the first `get` of `name`; listing and ``in`` do not import it.

        Raises ValueError if `name` already belongs to a different object or target.
        """
        module, sep, attribute = target.partition(":")
        if not sep or not module or not attribute:
            raise ValueError(
                f"{self.family} {name!r}: a lazy target is 'module:attribute', got {target!r}"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.family} name must be a non-empty string, got {name!r}")
        with self._lock:
            self._refuse_alias(name)
            existing = self._entries.get(name)
            if existing is None:
                self._entries[name] = _Deferred(target)
                return
            known = existing.target if isinstance(existing, _Deferred) else _target(existing)
            if known != target:
                raise ValueError(
                    f"{self.family} name {name!r} is already registered to "
                    f"{known.replace(':', '.')}; cannot register {target.replace(':', '.')} "
                    "under it (choose another name)"
                )

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Decorator: `add` the decorated class or function as `name`, with `aliases`."""

        def decorate(obj: T) -> T:
            self.add(name, obj)
            for alias in aliases:
                self.alias(alias, name)
            return obj

        return decorate

    def alias(self, alias: str, name: str) -> None:
        """Make `alias` another name of the entry registered as `name`: `get(alias)` is
        `get(name)`, and listings show the entry once, under `name`.

        Raises ValueError if `name` is not an entry's own name, or if `alias` already names
        another entry (declaring the same alias twice is a no-op).
        """
        if not isinstance(alias, str) or not alias:
            raise ValueError(f"a {self.family} alias must be a non-empty string, got {alias!r}")
        with self._lock:
            if alias == name and name in self._entries:
                return  # an entry's own name is no alias of it
            if name not in self._entries:
                raise ValueError(
                    f"{self.family} alias {alias!r}: {name!r} is not a registered "
                    f"{self.family} (register it before its aliases)"
                )
            owner_name = alias if alias in self._entries else self._aliases.get(alias, name)
            if owner_name != name:
                owner = _describe(self._entries[owner_name])
                raise ValueError(
                    f"{self.family} name {alias!r} is already registered to {owner}; cannot "
                    f"make it an alias of {name!r} (choose another name)"
                )
            self._aliases[alias] = name

    def _refuse_alias(self, name: str) -> None:
        target = self._aliases.get(name)
        if target is not None:
            raise ValueError(
                f"{self.family} name {name!r} is an alias of {target!r}; cannot register "
                "another object under it (choose another name)"
            )

    # -- looking up ---------------------------------------------------------------------

    def get(self, name: str) -> T:
        """The object registered as `name`; `UnknownNameError` (a ValueError) if none is."""
        if not self._loaded:
            self._load()
        try:
            name = self._aliases.get(name, name)
            entry = self._entries[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            known = self.names(aliases=False)
            raise UnknownNameError(
                f"unknown {self.family} {name!r}{did_you_mean(name, self.names())}; "
                f"registered: {', '.join(known) or 'none'}"
            ) from None
        if isinstance(entry, _Deferred):
            return self._resolve(name)
        return entry

    factory = get
    """The same as `get`, read better where the entries are classes or factories."""

    def names(self, aliases: bool = True) -> list[str]:
        """Every registered name, aliases included, sorted; with ``aliases=False`` each entry
        once, by its own name."""
        if not self._loaded:
            self._load()
        if aliases:
            return sorted([*self._entries, *self._aliases])
        return sorted(self._entries)

    def aliases(self, name: str) -> list[str]:
        """The aliases of the entry registered as `name` (or as an alias `name`), sorted."""
        own = self.canonical(name)
        return sorted(a for a, target in self._aliases.items() if target == own)

    def canonical(self, name: str) -> str:
        """The entry's own name for `name`: `name` itself, or the entry an alias names.
        `UnknownNameError` if neither is registered."""
        if not self._loaded:
            self._load()
        own = self._aliases.get(name, name) if isinstance(name, str) else name
        if own not in self._entries:
            self.get(name)  # raises the unknown-name error, with its did-you-mean
        return own

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        if not self._loaded:
            self._load()
        try:
            return name in self._entries or name in self._aliases
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    # -- loading ------------------------------------------------------------------------

    def _resolve(self, name: str) -> T:
        """Import the object of lazy entry `name` and keep it in place of the declaration."""
        with self._lock:
            entry = self._entries[name]
            if isinstance(entry, _Deferred):
                obj: T = entry.load()  # an error here leaves the declaration: the next get retries
                self._entries[name] = obj
                return obj
            return entry

    def _load(self) -> None:
        # Other threads wait on the lock for the whole load; the loading thread itself may
        # look names up while the loader imports a module (it then sees what is there so far).
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                if self._loader is not None:
                    self._loader()
                if self.entry_point_group is not None:
                    self._load_entry_points(entry_points(group=self.entry_point_group))
                self._loaded = True  # not on an error: the next lookup tries again
            finally:
                self._loading = False

    def _load_entry_points(self, points: Iterable[EntryPoint]) -> None:
        for point in points:
            plugin = f"{self.family} plugin {point.name!r} ({point.value}"
            dist = getattr(point, "dist", None)
            if dist is not None:
                plugin += f", from {dist.name}"
            plugin += f", entry-point group {self.entry_point_group!r})"
            try:
                obj = point.load()
            except Exception as exc:  # a broken plugin must not break the others
                warnings.warn(
                    f"skipped {plugin}: it failed to load: {type(exc).__name__}: {exc}",
                    PluginWarning,
                    stacklevel=4,
                )
                continue
            owner = self._aliases.get(point.name, point.name)
            existing = self._entries.setdefault(owner, obj)
            if existing is not obj or owner != point.name:
                warnings.warn(
                    f"skipped {plugin}: the name {point.name!r} is already registered to "
                    f"{_describe(existing)}; rename the plugin's entry point",
                    PluginWarning,
                    stacklevel=4,
                )


# -- factory parameters ---------------------------------------------------------------------


def parameters(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The named parameters of a class or factory: its signature (following signature
    decorators) without ``self``, ``*args`` and ``**kwargs``."""
    return {
        name: p
        for name, p in inspect.signature(factory).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name != "self"
    }


def check_arguments(what: str, factory: Callable[..., Any], given: Mapping[str, Any]) -> None:
    """Raise ValueError if `given` do not fit `factory`: an unknown name (with a did-you-mean
    and the accepted names) or a value of the wrong type.

    Values are checked against simple annotations (bool, int, float, str, None, Literal and
    unions of those; string annotations are parsed, never evaluated) or, without an
    annotation, against the type of the default. Other annotations are not checked. `what`
    starts each message, e.g. ``"policy 'fifo'"``.

    Numbers must mean a number: NaN is refused everywhere (also inside a list or mapping),
    since every comparison with it is false and a policy would silently misorder jobs.
    Infinity is accepted where it means "never" or "unbounded" (``starve_s=inf``), except
    for a scheduling period (`PERIOD_PARAMETERS`, or the names a factory lists in its
    ``finite_parameters`` attribute): a round every ``inf`` seconds never comes.
    """
    signature = inspect.signature(factory)
    named = parameters(factory)
    open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for key in given:
        if key not in named and not open_ended:
            accepted = ", ".join(named) or "none"
            raise ValueError(
                f"{what}: unknown parameter {key!r}{did_you_mean(key, named)}; "
                f"it accepts {accepted}"
            )
    positional_only = [k for k in given if k in named and named[k].kind is named[k].POSITIONAL_ONLY]
    if positional_only:
        raise ValueError(f"{what}: parameter {positional_only[0]!r} cannot be given by name")
    namespaces = _namespaces(factory)
    for key, value in given.items():
        if key not in named:
            continue
        parameter = named[key]
        if parameter.default is not parameter.empty and value is parameter.default:
            continue
        accepted_kinds = _accepted(parameter, namespaces)
        if accepted_kinds is not None and not any(_fits(k, value) for k in accepted_kinds):
            raise ValueError(
                f"{what}: parameter {key!r} must be {_say(accepted_kinds)}, got {value!r}"
            )
        _check_finite(what, factory, key, value)


PERIOD_PARAMETERS = frozenset({"round_s", "slice_s", "quantum_s", "interval_s"})
"""Parameter names that are scheduling periods, for which `check_arguments` refuses inf."""


def _check_finite(what: str, factory: Callable[..., Any], key: str, value: object) -> None:
    """Refuse NaN anywhere in `value`, and inf for a period parameter (see `check_arguments`)."""
    if _has_nan(value, depth=0):
        raise ValueError(
            f"{what}: parameter {key!r} is NaN{'' if _is_number(value) else ' inside'} "
            f"({value!r}); give a number (inf for none/never where that makes sense)"
        )
    finite = PERIOD_PARAMETERS | set(getattr(factory, "finite_parameters", ()))
    if key in finite and _is_number(value) and math.isinf(value):  # type: ignore[arg-type]
        raise ValueError(
            f"{what}: parameter {key!r} must be a finite number, got {value!r}; it is a "
            "period, and one of inf would never come"
        )


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _has_nan(value: object, depth: int) -> bool:
    if _is_number(value):
        return math.isnan(value)  # type: ignore[arg-type]
    if depth > 20:  # parameters are a few levels deep; never walk a deep structure
        return False
    if isinstance(value, Mapping):
        return any(_has_nan(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_nan(v, depth + 1) for v in value)
    return False


class _Literal:
    """One value of a ``Literal[...]`` annotation."""

    def __init__(self, value: object) -> None:
        self.value = value


_SIMPLE: dict[str, type] = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "None": type(None),
}


def _namespaces(factory: Callable[..., Any]) -> list[Mapping[str, Any]]:
    owners = inspect.getmro(factory) if inspect.isclass(factory) else (factory,)
    spaces: list[Mapping[str, Any]] = []
    for owner in owners:
        module = sys.modules.get(getattr(owner, "__module__", "") or "")
        if module is not None:
            spaces.append(vars(module))
    return spaces


def _accepted(
    parameter: inspect.Parameter, namespaces: list[Mapping[str, Any]]
) -> list[type | _Literal] | None:
    annotation = parameter.annotation
    if annotation is parameter.empty:
        default = parameter.default
        if isinstance(default, bool):
            return [bool]
        if isinstance(default, (int, float, str)):
            return [type(default)]
        return None
    try:
        return _from_annotation(annotation, namespaces)
    except (SyntaxError, ValueError, TypeError, RecursionError):
        return None


def _from_annotation(
    annotation: object, namespaces: list[Mapping[str, Any]]
) -> list[type | _Literal] | None:
    if isinstance(annotation, str):
        return _from_node(ast.parse(annotation, mode="eval").body, namespaces)
    if annotation is None or annotation is type(None):
        return [type(None)]
    if annotation in (bool, int, float, str):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [_Literal(v) for v in typing.get_args(annotation)]
    if origin is typing.Union or origin is types.UnionType:
        return _union(_from_annotation(a, namespaces) for a in typing.get_args(annotation))
    return None


def _union(
    parts: Iterable[list[type | _Literal] | None],
) -> list[type | _Literal] | None:
    kinds: list[type | _Literal] = []
    for part in parts:
        if part is None:
            return None  # one member we cannot check: accept anything rather than guess
        kinds.extend(part)
    return kinds


def _head(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("typing", "typing_extensions", "t"):
            return node.attr
    return None


def _from_node(node: ast.expr, namespaces: list[Mapping[str, Any]]) -> list[type | _Literal] | None:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return [type(None)]
        if isinstance(node.value, str):  # a quoted annotation inside an annotation
            return _from_annotation(node.value, namespaces)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_from_node(node.left, namespaces), _from_node(node.right, namespaces)])
    if isinstance(node, ast.Name):
        if node.id in _SIMPLE:
            return [_SIMPLE[node.id]]
        for space in namespaces:  # a type alias of the defining module, e.g. Mode = Literal[...]
            if node.id in space:
                return _from_annotation(space[node.id], [])
        return None
    if isinstance(node, ast.Subscript):
        head = _head(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            if all(isinstance(i, ast.Constant) for i in items):
                return [_Literal(i.value) for i in items]  # type: ignore[attr-defined]
            return None
        if head == "Optional":
            return _union([_from_node(items[0], namespaces), [type(None)]])
        if head == "Union":
            return _union(_from_node(i, namespaces) for i in items)
    return None


def _fits(kind: type | _Literal, value: object) -> bool:
    if isinstance(kind, _Literal):
        return bool(value == kind.value) and isinstance(value, bool) == isinstance(kind.value, bool)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    return isinstance(value, kind)


def _say(kinds: list[type | _Literal]) -> str:
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    parts: list[str] = []
    literals = [repr(k.value) for k in kinds if isinstance(k, _Literal)]
    if literals:
        parts.append(literals[0] if len(literals) == 1 else f"one of {', '.join(literals)}")
    for kind in kinds:
        if isinstance(kind, _Literal):
            continue
        word = "None" if kind is type(None) else words.get(kind, kind.__name__)
        if word not in parts:
            parts.append(word)
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


# -- import paths ---------------------------------------------------------------------------

_IMPORT_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_import_path(name: object) -> bool:
    """Whether `name` is spelled as an import path (``package.module:Class``), not a name."""
    return isinstance(name, str) and ":" in name


class ImportRefusedError(DlschedError, ValueError):
    """An import path that a config may not use: no opt-in, or not a plug-in class."""


def import_class(
    family: str,
    path: str,
    *,
    allowed: bool,
    opt_in: str,
    problem: Callable[[type], str | None],
) -> type:
    """The class at import path `path` (``package.module:Class``) of plug-in family `family`.

    Importing a module runs its code, so a name read from a file (an experiment, a command
    line) may be an import path only when the user opted in (`allowed`; `opt_in` says how,
    in the refusal). Without it, nothing is imported. With it, the module is imported — that
    is the code the user allowed — but the object found is only returned, never called, and
    only if it is a class that `problem` finds nothing wrong with (`problem(cls)` returns
    what is missing, or None): a function such as ``os:system`` is refused.
    """
    if not _IMPORT_PATH.fullmatch(path):
        raise ImportRefusedError(
            f"{family} {path!r} is neither a registered name nor an import path of the form "
            "'package.module:Class'"
        )
    if not allowed:
        raise ImportRefusedError(
            f"{family} {path!r} is an import path, and importing it runs that module's code, "
            f"which needs {opt_in}; or use a registered {family} name (a package can "
            "register one through an entry point)"
        )
    module_name, _, attribute = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # the user's module: any error on import is theirs to fix
        raise ImportRefusedError(
            f"cannot import {family} {path!r}: {type(exc).__name__}: {exc}"
        ) from None
    if not inspect.isclass(obj):
        raise ImportRefusedError(
            f"{family} {path!r} is {_a(type(obj).__name__)}, not {_a(family)} class; an import "
            f"path must name a class that implements the {family} protocol"
        )
    missing = problem(obj)
    if missing:
        raise ImportRefusedError(f"{family} {path!r} is not {_a(family)} class: {missing}")
    return obj


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def code_digest(path: str) -> dict[str, str]:
    """The SHA-256 of the source file of each module that an import path's class comes from:
    the module it names and the one that defines the class (``{module: sha256}``).

    Call it after `import_class`. A module without a file (built in, or a namespace) counts
    by its name only.
    """
    module_name, _, attribute = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    digests: dict[str, str] = {}
    for name in dict.fromkeys([module_name, getattr(obj, "__module__", module_name)]):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) if module is not None else None
        digests[name] = _file_digest(file) if file else "built-in"
    return digests


def code_files(digests: Mapping[str, str]) -> dict[str, str]:
    """The file of each module named in `digests` (as `code_digest` gives them), imported."""
    files: dict[str, str] = {}
    for name in digests:
        module = sys.modules.get(name)
        files[name] = str(getattr(module, "__file__", None) or name)
    return files


def _file_digest(file: str) -> str:
    with open(file, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()
