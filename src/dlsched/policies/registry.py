"""Policy registry: names → factories, extensible through the `dlsched.policies` entry points.

A third-party package registers ``mypolicy = mypkg.module:MyPolicy`` under the entry-point
group ``dlsched.policies``; `get("mypolicy", **params)` then finds it without forking dlsched.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

_REGISTRY: dict[str, Callable[..., Any]] = {}
_entry_points_loaded = False


def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make a policy available as `name`."""

    def add(factory: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"policy name {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return add


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group="dlsched.policies"):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.load()


def names() -> list[str]:
    """Every registered policy name, sorted."""
    _load_entry_points()
    return sorted(_REGISTRY)


def describe(name: str) -> str:
    """The first line of a policy's docstring."""
    doc = inspect.getdoc(_factory(name)) or ""
    return doc.splitlines()[0] if doc else ""


def factory(name: str) -> Callable[..., Any]:
    """The class (or factory) registered under `name`."""
    return _factory(name)


def check_params(name: str, factory_: Callable[..., Any], params: dict[str, Any]) -> None:
    """Raise ValueError naming the accepted parameters if `params` do not fit `factory_`."""
    try:
        inspect.signature(factory_).bind(**params)
    except TypeError:
        accepted = [p for p in inspect.signature(factory_).parameters if p != "self"]
        raise ValueError(
            f"policy {name!r} got parameters {sorted(params)}; it accepts {accepted or 'none'}"
        ) from None


def _factory(name: str) -> Callable[..., Any]:
    _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; registered: {', '.join(names())}") from None


def get(name: str, **params: Any) -> Any:
    """A new policy instance by name, with its parameters."""
    make = _factory(name)
    check_params(name, make, params)
    return make(**params)
