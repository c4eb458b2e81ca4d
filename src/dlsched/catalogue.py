"""What is registered, as data: policies, placements, trace formats, bundled clusters,
duration predictors.

The documentation's reference pages are generated from these functions (``docs/gen_*.py``),
so that the catalogue lists exactly what the registries hold and cannot go stale. Nothing
here changes how anything runs.

>>> entry = next(p for p in policies() if p.name == "fifo")
>>> entry.module, entry.parameters[0].name
('dlsched.policies.fifo', 'backfill')
>>> "tiresias" in policy_reproductions()["tiresias"]
True
>>> ", ".join(p.name for p in predictors())
'gbdt, helios, oracle'
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Parameter:
    """One parameter of a registered factory: its name, default (``repr``, or None when it
    is required) and annotation as written."""

    name: str
    default: str | None
    annotation: str


@dataclass(frozen=True)
class PolicyEntry:
    """A registered policy: `summary` is its class docstring's first line, `about` its
    module's docstring (the paper, what is faithful, what is simplified), `aliases` the
    other names registered to the same factory."""

    name: str
    summary: str
    module: str
    about: str
    parameters: tuple[Parameter, ...]
    aliases: tuple[str, ...]


def _parameters(factory: Any) -> tuple[Parameter, ...]:
    from dlsched.registry import parameters

    found = []
    for param in parameters(factory).values():
        annotation = param.annotation
        if annotation is param.empty:
            written = ""
        elif isinstance(annotation, str):
            written = annotation
        else:
            written = getattr(annotation, "__name__", str(annotation))
        default = None if param.default is param.empty else repr(param.default)
        found.append(Parameter(param.name, default, written))
    return tuple(found)


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.splitlines()[0] if doc else ""


def policies() -> list[PolicyEntry]:
    """Every registered policy (built-in and plug-in) once, by its own name, sorted; its
    older spellings are its `aliases`."""
    from dlsched import policies as registry

    entries = []
    for name in registry.names(aliases=False):
        factory = registry.factory(name)
        module = sys.modules.get(getattr(factory, "__module__", ""))
        entries.append(
            PolicyEntry(
                name=name,
                summary=_first_line(factory),
                module=module.__name__ if module is not None else "",
                about=inspect.getdoc(module) or "" if module is not None else "",
                parameters=_parameters(factory),
                aliases=tuple(registry.aliases(name)),
            )
        )
    return entries


def _named_in_source(function: Any, known: set[str]) -> set[str]:
    """The string constants in a function's source that are in `known` (policy names)."""
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return set()
    tree = ast.parse(textwrap.dedent(source))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in known
    }


def policy_reproductions(shared: str | Path | None = None) -> dict[str, list[str]]:
    """Policy name → the registered reproductions that run it, sorted.

    Read from each reproduction's planned tasks (their ``policy``) where its published data
    is in the shared folder (`shared`, else ``$DLSCHED_SHARED`` or ``../shared``). Where the
    data is absent, or the tasks name no policy, from the policy names in the source of the
    reproduction's `measure`, else the first word of its name (``optimus-pollux``: optimus).
    """
    from dlsched import policies as registry
    from dlsched.reproduce import REPRODUCTIONS, shared_folder

    own_name = {  # every name a policy answers to -> its own name
        alias: name for name in registry.names(aliases=False) for alias in registry.aliases(name)
    }
    own_name.update((name, name) for name in registry.names(aliases=False))
    known = set(own_name)
    folder = shared_folder(str(shared) if shared is not None else None)
    found: dict[str, set[str]] = {}
    for name in REPRODUCTIONS.names():
        reproduction = REPRODUCTIONS.get(name)
        used: set[str] = set()
        try:
            reproduction.check_data(folder)
            with warnings.catch_warnings():  # planning only: a solver's absence is no concern
                warnings.simplefilter("ignore")
                points = reproduction.plan(folder, False)
        except (OSError, ValueError, KeyError):  # no data here: fall back to the source
            points = []
        for point in points:
            policy = point.task.spec.get("policy")
            if isinstance(policy, str) and policy in known:
                used.add(policy)
        if not used:
            used = _named_in_source(reproduction.measure, known)
        if not used:
            first = name.split("-")[0]  # "optimus-pollux": Optimus, as Pollux's figure ran it
            used = {first} if first in known else set()
        for policy in used:
            found.setdefault(own_name[policy], set()).add(name)
    return {policy: sorted(names) for policy, names in sorted(found.items())}


@dataclass(frozen=True)
class Entry:
    """A registered name with the docstring of what it stands for (`about`) and the module
    that defines it."""

    name: str
    about: str
    module: str


def placements() -> list[Entry]:
    """Every placement strategy (`placement=` on a policy), sorted by name."""
    from dlsched.engine.placement import STRATEGIES

    entries = []
    for name in STRATEGIES.names():
        strategy = STRATEGIES.get(name)
        owner = strategy if inspect.isclass(strategy) or inspect.isfunction(strategy) else None
        doc = inspect.getdoc(owner if owner is not None else type(strategy)) or ""
        entries.append(Entry(name, doc, getattr(owner or type(strategy), "__module__", "")))
    return entries


def trace_formats() -> list[Entry]:
    """Every trace format (`load_trace(..., format=...)`), with its loader module's docstring."""
    from dlsched.traces import LOADERS

    entries = []
    for name in LOADERS.names():
        load = LOADERS.get(name)
        module = sys.modules.get(getattr(load, "__module__", ""))
        about = inspect.getdoc(module) if module is not None else inspect.getdoc(load)
        entries.append(Entry(name, about or "", module.__name__ if module else ""))
    return entries


@dataclass(frozen=True)
class ClusterEntry:
    """A bundled cluster config: its name, description, GPUs by type and node count."""

    name: str
    description: str
    gpus_by_type: Mapping[str, int]
    nodes: int
    vcs: int


def bundled_clusters() -> list[ClusterEntry]:
    """Every bundled cluster config (``load_cluster(name)``), sorted by name."""
    from dlsched.bundled import bundled_root
    from dlsched.cluster import load_cluster

    entries = []
    for path in sorted((bundled_root() / "configs" / "clusters").glob("*.yaml")):
        cluster = load_cluster(path)
        gpus: dict[str, int] = {}
        for key in cluster.gpu_type_of:  # a type's key; its name as the file writes it
            gpu_type = cluster.gpu_types[key].name
            gpus[gpu_type] = gpus.get(gpu_type, 0) + 1
        entries.append(
            ClusterEntry(
                name=path.stem,
                description=" ".join(cluster.description.split()),
                gpus_by_type=dict(sorted(gpus.items())),
                nodes=len(cluster.nodes),
                vcs=len(cluster.vcs),
            )
        )
    return entries


@dataclass(frozen=True)
class PredictorEntry:
    """A registered duration predictor (`dlsched.predict`): `summary` is its class
    docstring's first line, `about` its module's docstring (the paper, the rules, what is
    ours), `parameters` those of its factory, `estimator` how a run asks for it."""

    name: str
    summary: str
    module: str
    about: str
    parameters: tuple[Parameter, ...]

    @property
    def estimator(self) -> str:
        """The estimator spec that makes a run's policies consult it."""
        return f"predict:{self.name}"


def predictors() -> list[PredictorEntry]:
    """Every registered duration predictor (built-in and plug-in), sorted by name. Listing
    them imports no optional dependency (scikit-learn is imported when a run starts)."""
    from dlsched.predict import PREDICTORS

    entries = []
    for name in PREDICTORS.names():
        factory = PREDICTORS.get(name)
        module = sys.modules.get(getattr(factory, "__module__", ""))
        entries.append(
            PredictorEntry(
                name=name,
                summary=_first_line(factory),
                module=module.__name__ if module else "",
                about=(inspect.getdoc(module) if module is not None else "") or "",
                parameters=_parameters(factory),
            )
        )
    return entries
