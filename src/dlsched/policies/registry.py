"""Policy registry: names → factories, extensible through the `dlsched.policies` entry points.

A third-party package registers ``mypolicy = mypkg.module:MyPolicy`` under the entry-point
group ``dlsched.policies``; `get("mypolicy", **params)` then finds it without forking dlsched.

The built-in policy modules (every module and sub-package of `dlsched.policies`) are imported
on the first lookup, not when `dlsched.policies` is imported, so that the engine and the
policies can import each other's light modules without a cycle. A policy module registers
its classes with `@register(name)`; adding a policy means adding a module, nothing else.
Clashes follow `dlsched.registry`: a name registered twice in code is an error, a plugin whose
name is taken is skipped with a warning.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

from dlsched import registry as _generic

_PACKAGE = "dlsched.policies"


def _import_builtin_policies() -> None:
    package = importlib.import_module(_PACKAGE)
    modules = pkgutil.walk_packages(package.__path__, prefix=f"{_PACKAGE}.", onerror=lambda n: None)
    for module in sorted(modules, key=lambda m: m.name):
        importlib.import_module(module.name)


POLICIES: _generic.Registry[Callable[..., Any]] = _generic.Registry(
    "policy", entry_point_group="dlsched.policies", loader=_import_builtin_policies
)
"""Every policy factory (usually a class) by name."""


def register(name: str, *aliases: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make a policy available as `name` (a ValueError if it is taken),
    and as each of `aliases` (older spellings that must keep working).

    Built-in names are lower-case words joined by underscores (``tiresias_gittins``); the
    earlier hyphenated spellings (``tiresias-gittins``, ``per-vc``, ``sjf-het``) and Gavel's
    long names of ``min_cost`` are aliases. A policy's result label (its ``name`` attribute)
    is unchanged by an alias, so existing results and run keys stay as they were.
    """
    return POLICIES.register(name, *aliases)


def names(aliases: bool = True) -> list[str]:
    """Every name a policy may be asked by, aliases included, sorted; with
    ``aliases=False`` every policy once, by its own name (as `dlsched policies` lists them)."""
    return POLICIES.names(aliases=aliases)


def aliases(name: str) -> list[str]:
    """The other names of policy `name` (``aliases("per_vc") == ["per-vc"]``)."""
    return POLICIES.aliases(name)


def factory(name: str) -> Callable[..., Any]:
    """The class (or factory) registered under `name` (or an alias of it).

    An unknown name is an `UnknownNameError` with a did-you-mean; a name that is a placement
    (``fgd``) says so, and how to give it to a policy.
    """
    try:
        return POLICIES.get(name)
    except _generic.UnknownNameError:
        from dlsched.engine.placement import STRATEGIES  # only for this message

        if isinstance(name, str) and name in STRATEGIES:
            raise _generic.UnknownNameError(
                f"unknown policy {name!r}: it is a placement, not a policy; give it to a "
                f"policy as its placement (command line: --policy fifo --param "
                f"placement={name}; experiment file: params: {{placement: {name}}}); "
                "`dlsched policies` lists both"
            ) from None
        raise


def describe(name: str) -> str:
    """The first line of a policy's docstring."""
    doc = inspect.getdoc(factory(name)) or ""
    return doc.splitlines()[0] if doc else ""


def parameters(name: str) -> dict[str, inspect.Parameter]:
    """A policy's parameters by name (its factory's signature without self and **kwargs).

    >>> parameters("fifo")["placement"].default
    'consolidated'
    """
    return _generic.parameters(factory(name))


def check_params(name: str, factory_: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Raise ValueError if `params` do not fit `factory_`: an unknown parameter (with a
    did-you-mean and the accepted ones) or a value of the wrong type (see
    `dlsched.registry.check_arguments`)."""
    _generic.check_arguments(f"policy {name!r}", factory_, params)


def get(name: str, **params: Any) -> Any:
    """A new policy instance by name, with its parameters (checked first).

    >>> get("tiresias", compat="maybe")
    Traceback (most recent call last):
    ...
    ValueError: policy 'tiresias': parameter 'compat' must be true or false, got 'maybe'
    """
    make = factory(name)
    check_params(name, make, params)
    return make(**params)


def policy_class_problem(cls: type) -> str | None:
    """What a class lacks to satisfy the `Policy` protocol, judged without making one."""
    if not callable(getattr(cls, "schedule", None)):
        return "it has no schedule(view) method (see dlsched.policies.Policy)"
    return None


def import_policy(path: str, *, allowed: bool, opt_in: str) -> Callable[..., Any]:
    """The policy class at import path `path` (``package.module:Class``), not instantiated.

    For names read from files and command lines: refused unless `allowed` (the user's
    opt-in, which `opt_in` names in the refusal), and refused unless it is a class with a
    ``schedule`` method (`dlsched.registry.import_class`)."""
    return _generic.import_class(
        "policy", path, allowed=allowed, opt_in=opt_in, problem=policy_class_problem
    )
