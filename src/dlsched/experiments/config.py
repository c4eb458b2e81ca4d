"""Experiment files: read, validate and expand into a grid of runs.

An experiment YAML names a cluster, a workload (+ transforms), the throughput model, the
estimator, the policies with their parameters, the seeds and the sweep axes (see
``configs/experiments/README.md``). ``load_experiment`` validates all of it — every sweep
value included — before anything runs; an error names the file and the key and says what to
change. Each cell of the grid resolves to a JSON-safe *run config* that alone determines the
run's result (the cluster inlined, the trace pinned by its SHA-256, the seed an integer); the
run's key is a hash of that config, so the same run is never computed twice.

**A config file is data.** Policies are found by registered name (built-ins and the
``dlsched.policies`` entry points). An import path (``package.module:Class``) runs that
module's code, so a file may use one only with ``allow_imports: true`` at its top (or
``dlsched run --allow-import``, ``load_experiment(..., allow_imports=True)``), and only for a
class with a ``schedule`` method; such a policy is never constructed during validation (its
parameters are checked against its signature), and the SHA-256 of its module's source goes
into the run config (``code``), so a run is recomputed when that code changes.

Validation also does what each run would do first — load the trace in its format, apply the
transforms, convert the jobs for the cluster and throughput model — once per distinct
workload, so that ``--dry-run`` catches every mistake a run would meet at its start. Its
errors name the file and what is wrong, never the content of a file the experiment names.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dlsched import policies, safeyaml
from dlsched import registry as _registry
from dlsched.bundled import bundled_root, bundled_trace, resolve_cluster
from dlsched.cluster import Cluster, read_cluster_file
from dlsched.errors import ConfigError, DlschedError, TraceError, did_you_mean
from dlsched.experiments.transforms import TRANSFORMS
from dlsched.perf import ESTIMATORS, THROUGHPUT_MODELS, make_estimator
from dlsched.perf.estimator import NoisyEstimator
from dlsched.traces import LOADERS, detect_format

TOP_KEYS = (
    "allow_imports",
    "name",
    "description",
    "cluster",
    "workload",
    "throughput",
    "estimator",
    "restart_overhead_s",
    "overheads",
    "provisioner",
    "unmeasured_batch",
    "policies",
    "seed",
    "seeds",
    "sweep",
)
WORKLOAD_KEYS = (
    "trace",
    "format",
    "lenient",
    "transforms",
    "arrival_rate_scale",
    "resample_per_seed",
)
ESTIMATOR_KEYS = ("name", "sigma", "sigma_throughput", "params")
POLICY_KEYS = ("name", "label", "params")
SWEEPABLE = (
    "cluster",
    "workload.trace",
    "workload.format",
    "workload.lenient",
    "workload.transforms",
    "workload.arrival_rate_scale",
    "throughput",
    "estimator",
    "estimator.sigma",
    "estimator.sigma_throughput",
    "restart_overhead_s",
)
"""Sweep axes besides ``params.<name>`` (a policy parameter, set on every policy that takes it)."""

KEY_CHARS = 16
"""Hex characters of a run key (64 bits of SHA-256)."""

MAX_REPLICATES = 10_000
"""The most replicates one experiment may ask for (``seeds: N``, or a list this long)."""

MAX_REPLICATE_NUMBER = 2**32 - 1
"""The largest replicate number a ``seeds:`` list may name."""

MAX_GRID_CELLS = 100_000
"""The most grid cells (policies × replicates × every sweep axis's values) of one experiment:
more is almost surely a mistake (split a real study into several files)."""

_TRANSFORM_INT_MIN = {"n": 1, "min_gpus": 1, "seed": 0}
"""The least value of each integer transform argument (``head: 0`` would leave no job)."""

_MIX_KINDS = ("static", "gns", "accordion")
"""The weights of transform ``batch_schedules``: numbers >= 0; left out, 0 (all left out: a
third each, `dlsched.experiments.dynamic`)."""

ALLOW_IMPORTS_HOW = (
    "'allow_imports: true' at the top of the experiment file (or `dlsched run --allow-import`)"
)
"""How an experiment opts in to import paths, as refusals say it."""


@dataclass(frozen=True)
class PolicyChoice:
    """One entry of ``policies:``: a display label, a policy name and its parameters."""

    label: str
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    code: Mapping[str, str] = field(default_factory=dict)
    """For a policy given by import path: the SHA-256 of its module's source file, by module
    (`dlsched.registry.code_digest`); empty for a registered policy."""


@dataclass(frozen=True)
class GridPoint:
    """One cell of the grid: a policy label, a replicate and a value per sweep axis.

    ``key`` names the run that computes it. Cells may share a run: a policy that does not
    take a swept parameter runs once, and every cell of that axis shows the same result.
    """

    key: str
    policy: str
    replicate: int
    axes: tuple[tuple[str, Any], ...] = ()

    def labels(self) -> dict[str, Any]:
        """``{"policy": ..., "replicate": ..., axis: value, ...}``."""
        return {"policy": self.policy, "replicate": self.replicate, **dict(self.axes)}


@dataclass(frozen=True)
class Run:
    """A run: its key and its resolved config (JSON-safe; it alone determines the result)."""

    key: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: the grid (``points``) and the distinct runs it needs."""

    name: str
    description: str
    source: str
    text: str
    policies: tuple[PolicyChoice, ...]
    seed: int
    replicates: tuple[int, ...]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    points: tuple[GridPoint, ...]
    runs: Mapping[str, Run]

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The sweep axes, in file order."""
        return tuple(name for name, _ in self.axes)


def canonical_json(value: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no spaces, ASCII, no NaN.

    An infinite parameter (``starve_s: inf``: never) is spelled ``Infinity`` as Python's
    `json` writes and reads it; NaN is refused before a value gets here (`_json_safe`), and
    a NaN that still arrives is an error, never a key."""
    if _has_nan(value):
        raise ValueError("NaN has no place in a run config")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _has_nan(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return value != value
    if depth < 50 and isinstance(value, dict):
        return any(_has_nan(v, depth + 1) for v in value.values())
    if depth < 50 and isinstance(value, (list, tuple)):
        return any(_has_nan(v, depth + 1) for v in value)
    return False


def run_key(config: Mapping[str, Any]) -> str:
    """The key of a resolved run config: a hash of its canonical JSON.

    The trace's location (``workload.trace.path``) is left out — the trace is pinned by its
    SHA-256 — so moving a checkout or a results directory does not invalidate results. A
    config whose policy, throughput model or estimator is an import path holds ``code``, the
    SHA-256 of those modules' sources, so the key changes when that code does.
    """
    identity = json.loads(canonical_json(config))
    identity["workload"]["trace"].pop("path", None)
    return hashlib.sha256(canonical_json(identity).encode()).hexdigest()[:KEY_CHARS]


def run_seed(root_seed: int, replicate: int) -> int:
    """The seed of replicate ``replicate``: child ``replicate`` of ``SeedSequence(root_seed)``.

    Every policy and sweep point of one replicate shares it (common random numbers), so a
    comparison between policies sees the same noise draws, and adding a policy or a sweep
    value never changes the seed — nor the key — of an existing run.
    """
    # the spawn key of child r, built directly: spawn(r + 1) would make r + 1 children
    child = np.random.SeedSequence(root_seed, spawn_key=(replicate,))
    return int(child.generate_state(1, dtype=np.uint32)[0])


def workload_seed(transform_seed: int, replicate_seed: int, index: int) -> int:
    """The seed of the seeded transform at `index` in one replicate, when the experiment
    resamples its workload per replicate (``workload: {resample_per_seed: true}``).

    It depends on the transform's own seed, its position and the replicate's seed
    (`run_seed`), so replicates draw different workloads and the same file always draws the
    same ones.
    """
    sequence = np.random.SeedSequence([replicate_seed, index, transform_seed])
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


class _Context:
    """Where a value came from, for error messages: the file and the key; whether the file
    may name import paths; and what validation already tried (`probed`: probe key → None)."""

    def __init__(self, source: str, allow_imports: bool = False) -> None:
        self.source = source
        self.folder = Path(source).resolve().parent if source != "<dict>" else Path.cwd()
        self.allow_imports = allow_imports
        self.probed: set[str] = set()
        self.scheduled: dict[str, bool] = {}
        self.workloads: OrderedDict[str, Any] = OrderedDict()
        self.digests: dict[str, dict[str, str]] = {}

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: key {key!r}: {message}")


def load_experiment(path: str | os.PathLike[str], *, allow_imports: bool = False) -> Experiment:
    """Read an experiment YAML file (`dlsched.safeyaml`), validate it and expand its grid.

    `path` is a file, or the name of a bundled experiment (``"quickstart"``).
    `allow_imports`: let its policies be import paths (``package.module:Class``) even if
    the file does not say ``allow_imports: true`` — **this runs code** from those modules.
    """
    source = resolve_experiment(path)
    text = safeyaml.read_text(source, "experiment file")
    data = safeyaml.load_text(text, str(source))
    return parse_experiment(data, source=str(source), text=text, allow_imports=allow_imports)


def resolve_experiment(path: str | os.PathLike[str]) -> Path:
    """A path as given if it exists, else a bundled experiment of that name."""
    given = Path(path)
    if given.exists():
        return given
    folder = bundled_root() / "configs" / "experiments"
    bundled = folder / f"{given.name.removesuffix('.yaml')}.yaml"
    if not given.parent.parts and bundled.is_file():
        return bundled
    known = sorted(p.stem for p in folder.glob("*.yaml"))
    raise ConfigError(
        f"{given}: no such experiment file, and no bundled experiment of that "
        f"name (bundled: {', '.join(known) or 'none'})"
    )


def parse_experiment(
    data: Any, source: str = "<dict>", text: str | None = None, *, allow_imports: bool = False
) -> Experiment:
    """Validate an experiment given as parsed YAML and expand its grid.

    Import paths among its policies need `allow_imports` or ``allow_imports: true`` in
    `data` (see the module docstring): **this runs code**."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: an experiment file must be a mapping with at least "
            "'cluster', 'workload' and 'policies'"
        )
    ctx = _Context(source)
    ctx.allow_imports = allow_imports or _bool(
        data.get("allow_imports", False), ctx, "allow_imports"
    )
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        hint = did_you_mean(unknown[0], TOP_KEYS)
        raise ctx.error(
            str(unknown[0]), f"is not an experiment key{hint}; the keys are {', '.join(TOP_KEYS)}"
        )
    for required in ("cluster", "workload", "policies"):
        if required not in data:
            raise ctx.error(
                required, "is missing; an experiment needs 'cluster', 'workload' and 'policies'"
            )
    name = data.get("name", Path(source).stem if source != "<dict>" else "experiment")
    if not isinstance(name, str) or not name.strip() or "/" in name or name.startswith("."):
        raise ctx.error("name", f"must be a non-empty name without '/', got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ctx.error("description", "must be text")

    workload, resample = _workload(data["workload"], ctx)
    base = {
        "cluster": _cluster(data["cluster"], ctx, "cluster"),
        "workload": workload,
        "throughput": _throughput(data.get("throughput", "duration"), ctx, "throughput"),
        "estimator": _estimator(data.get("estimator", "oracle"), ctx, "estimator"),
        "restart_overhead_s": _non_negative(
            data.get("restart_overhead_s", 0.0), ctx, "restart_overhead_s"
        ),
    }
    if "overheads" in data:  # only when given, like the provisioner
        if "restart_overhead_s" in data:
            raise ctx.error(
                "overheads",
                "and 'restart_overhead_s' are both given; a preset sets the restart cost "
                "itself, so give one of them",
            )
        base["overheads"] = _overheads(data["overheads"], ctx, "overheads")
    if "provisioner" in data:  # only when given: the run keys of other experiments stay
        base["provisioner"] = _provisioner(data["provisioner"], ctx, "provisioner")
    if "unmeasured_batch" in data:  # (`dlsched.experiments.dynamic`)
        base["unmeasured_batch"] = _unmeasured_batch(data["unmeasured_batch"], ctx)
    choices = _policies(data["policies"], ctx)
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ctx.error(
            "seed", f"must be an integer >= 0 (the experiment's root seed), got {seed!r}"
        )
    replicates = _replicates(data.get("seeds", 1), ctx)
    axes, resolved_axes = _sweep(data.get("sweep") or {}, ctx, choices)
    _check_grid_size(len(choices), len(replicates), resolved_axes, ctx)

    points: list[GridPoint] = []
    runs: dict[str, Run] = {}
    seeds = {r: run_seed(seed, r) for r in replicates}
    values_by_axis = [range(len(values)) for _, values in resolved_axes]
    for combo in itertools.product(*values_by_axis):
        setting = [
            (axis, resolved[i], shown[i], f"sweep.{axis}[{i}]")
            for (axis, resolved), i, (_, shown) in zip(resolved_axes, combo, axes, strict=True)
        ]
        for choice in choices:
            for replicate in replicates:
                config = _combine(base, choice, seeds[replicate], setting, ctx, resample)
                key = run_key(config)
                runs.setdefault(key, Run(key, config))
                points.append(
                    GridPoint(
                        key,
                        choice.label,
                        replicate,
                        tuple((axis, shown) for axis, _, shown, _ in setting),
                    )
                )
    if resample and not any(
        "seed" in step for run in runs.values() for step in run.config["workload"]["transforms"]
    ):
        raise ctx.error(
            "workload.resample_per_seed",
            "no transform of this workload draws random numbers, so there is nothing to "
            f"resample; add one ({', '.join(_seeded_transforms())}) or remove the key",
        )
    return Experiment(
        name=name,
        description=description,
        source=source,
        text=text if text is not None else yaml.safe_dump(data, sort_keys=False),
        policies=tuple(choices),
        seed=seed,
        replicates=replicates,
        axes=tuple(axes),
        points=tuple(points),
        runs=runs,
    )


# ---- one field each ---------------------------------------------------------------------
def _cluster(value: Any, ctx: _Context, key: str) -> dict[str, Any]:
    if isinstance(value, dict):
        data = dict(value)
        data.setdefault("name", "inline")
        where = f"{ctx.source} (key {key!r})"
    elif isinstance(value, str) and value.strip():
        local = ctx.folder / value
        try:
            path = local if local.is_file() else resolve_cluster(value)
        except FileNotFoundError as exc:
            raise ctx.error(
                key,
                f"{exc}; give a bundled cluster name, a cluster YAML path "
                "relative to the experiment file, or an inline mapping",
            ) from None
        try:
            data = read_cluster_file(Path(path))
        except ConfigError as exc:
            raise ctx.error(key, _unquoted(str(exc))) from None
        if isinstance(data, dict):
            data.setdefault("name", path.stem)
        where = str(path)
    else:
        raise ctx.error(
            key,
            f"must be a bundled cluster name, a cluster YAML path or a mapping "
            f"with 'nodes', got {value!r}",
        )
    try:
        Cluster.from_dict(data, where)
    except ConfigError as exc:
        inner = re.fullmatch(rf"{re.escape(where)}: key '(.+?)': (.*)", str(exc), re.S)
        if isinstance(value, dict) and inner:  # inline: name the key inside this file
            raise ctx.error(f"{key}.{inner.group(1)}", inner.group(2)) from None
        # a file the experiment names: say what is wrong where, not what it holds
        raise ctx.error(key, str(exc) if isinstance(value, dict) else _unquoted(str(exc))) from None
    return _json_safe(data, ctx, key)


def _workload(value: Any, ctx: _Context) -> tuple[dict[str, Any], bool]:
    """The workload's part of a run config, and whether to resample it per replicate."""
    if isinstance(value, str):
        value = {"trace": value}
    if not isinstance(value, dict):
        raise ctx.error("workload", "must be a mapping with at least 'trace' (or a trace path)")
    _check_keys(value, WORKLOAD_KEYS, ctx, "workload", "a workload key")
    if "trace" not in value:
        raise ctx.error("workload.trace", "is missing; name a trace file")
    resample = _bool(value.get("resample_per_seed", False), ctx, "workload.resample_per_seed")
    return {
        "trace": _trace(value["trace"], ctx, "workload.trace"),
        "format": _format(value.get("format", "auto"), ctx, "workload.format"),
        "lenient": _bool(value.get("lenient", False), ctx, "workload.lenient"),
        "transforms": _transforms(value.get("transforms", []), ctx, "workload.transforms"),
        "arrival_rate_scale": _positive(
            value.get("arrival_rate_scale", 1.0), ctx, "workload.arrival_rate_scale"
        ),
    }, resample


def _trace(value: Any, ctx: _Context, key: str) -> dict[str, Any]:
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(key, f"must be a trace file path, got {value!r}")
    candidates = (
        [Path(value)]
        if Path(value).is_absolute()
        else [ctx.folder / value, Path.cwd() / value, bundled_trace(value), bundled_root() / value]
    )
    for candidate in candidates:
        if candidate.is_file():
            path = candidate.resolve()
            return {"path": str(path), "name": path.name, "sha256": file_sha256(str(path))}
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    raise ctx.error(
        key,
        f"trace file {value!r} not found (looked at {looked}); give a path "
        "relative to the experiment file or the name of a bundled trace",
    )


def file_sha256(path: str) -> str:
    """The SHA-256 of a file (hex), cached while its size and modification time stay."""
    stat = os.stat(path)
    return _sha256(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _format(value: Any, ctx: _Context, key: str) -> str:
    known = ["auto", *sorted(LOADERS)]
    if value not in known:
        raise ctx.error(key, f"unknown trace format {value!r}; choose one of {', '.join(known)}")
    return str(value)


def _transforms(value: Any, ctx: _Context, key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ctx.error(key, "must be a list such as [{scale_arrivals: 2.0}, {head: 100}]")
    steps = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        args: dict[str, Any] | None
        if isinstance(item, dict) and "name" in item:
            name, args = item["name"], {k: v for k, v in item.items() if k != "name"}
        elif isinstance(item, dict) and len(item) == 1:
            ((name, arg),) = item.items()
            known = TRANSFORMS[name][1] if name in TRANSFORMS else {}
            required = [a for a in known if a != "seed"]
            if name in TRANSFORMS and len(required) == 1 and not isinstance(arg, dict):
                args = {required[0]: arg}
            else:
                args = arg if isinstance(arg, dict) else None
        else:
            raise ctx.error(where, "must be {name: ..., <arguments>} or {<name>: <argument>}")
        if name not in TRANSFORMS:
            raise ctx.error(
                where,
                f"unknown transform {name!r}{did_you_mean(name, TRANSFORMS)}; "
                f"known: {', '.join(TRANSFORMS)}",
            )
        wanted = TRANSFORMS[name][1]
        if not isinstance(args, dict):
            raise ctx.error(where, f"transform {name!r} takes {', '.join(wanted)}")
        _check_keys(args, wanted, ctx, where, f"an argument of transform {name!r}")
        args = {"seed": 0, **args} if "seed" in wanted else args
        if name == "batch_schedules":
            given = any(kind in args for kind in _MIX_KINDS)
            args = {**{kind: 0.0 if given else 1 / 3 for kind in _MIX_KINDS}, **args}
        missing = [arg for arg in wanted if arg not in args]
        if missing:
            raise ctx.error(
                f"{where}.{missing[0]}",
                f"is missing; transform {name!r} takes {', '.join(wanted)}",
            )
        step: dict[str, Any] = {"name": name}
        for arg, kind in wanted.items():
            if kind is int:
                number, least = args[arg], _TRANSFORM_INT_MIN.get(arg, 0)
                if isinstance(number, bool) or not isinstance(number, int) or number < least:
                    raise ctx.error(
                        f"{where}.{arg}", f"must be an integer >= {least}, got {number!r}"
                    )
                step[arg] = number
            elif name == "batch_schedules":
                step[arg] = _non_negative(args[arg], ctx, f"{where}.{arg}")
            else:
                step[arg] = _positive(args[arg], ctx, f"{where}.{arg}")
        _check_step(step, ctx, where)
        steps.append(step)
    return steps


def _check_step(step: Mapping[str, Any], ctx: _Context, where: str) -> None:
    """The checks of a transform's arguments together (each is checked alone above)."""
    if step["name"] == "deadlines" and step["low"] > step["high"]:
        raise ctx.error(
            f"{where}.low",
            f"is {step['low']:g}, more than high ({step['high']:g}); deadlines are drawn "
            "from U(low, high) × duration, so give low <= high",
        )
    if step["name"] == "batch_schedules" and not sum(step[k] for k in _MIX_KINDS) > 0:
        raise ctx.error(
            where,
            f"gives every kind ({', '.join(_MIX_KINDS)}) weight 0; give some kind a weight > 0",
        )
    if step["name"] == "elastic" and step["max_factor"] < 1:
        raise ctx.error(
            f"{where}.max_factor",
            f"is {step['max_factor']:g}; a job may grow to max_factor × its GPUs, so give "
            "a number >= 1",
        )


def _seeded_transforms() -> list[str]:
    return [name for name in TRANSFORMS if "seed" in TRANSFORMS[name][1]]


@lru_cache(maxsize=64)
def _detected(path: str) -> str:
    return detect_format(path)


def _detect(path: str, ctx: _Context, key: str) -> str:
    try:
        return _detected(path)
    except OSError as exc:
        raise ctx.error(key, f"{path}: cannot read the trace ({exc.strerror})") from None
    except DlschedError:
        # not the loader's message: it quotes the file's first line, and the file may be
        # anything an experiment names (`trace: /etc/passwd`)
        raise ctx.error(
            key,
            f"{path}: cannot tell the trace format from its name or its header; set "
            f"workload.format to one of {', '.join(sorted(LOADERS))}",
        ) from None


def _throughput_problem(cls: type) -> str | None:
    missing = [m for m in ("throughput", "reference_type") if not callable(getattr(cls, m, None))]
    if missing:
        return f"it has no {' or '.join(missing)} method (see dlsched.perf.ThroughputModel)"
    return None


def _estimator_problem(cls: type) -> str | None:
    from dlsched.perf.estimator import OracleEstimator

    if not issubclass(cls, OracleEstimator):
        return "it does not subclass dlsched.perf.OracleEstimator (what policies query)"
    return None


USER_CLASSES: dict[str, Callable[[type], str | None]] = {
    "policy": policies.registry.policy_class_problem,
    "throughput model": _throughput_problem,
    "estimator": _estimator_problem,
}
"""What a class given by import path must have, by what it stands for."""


def user_class(kind: str, path: str, *, allow_imports: bool) -> type:
    """The class at import path `path` standing for a `kind` (a key of `USER_CLASSES`):
    refused without `allow_imports`, and unless it has what a `kind` needs; not called."""
    return _registry.import_class(
        kind, path, allowed=allow_imports, opt_in=ALLOW_IMPORTS_HOW, problem=USER_CLASSES[kind]
    )


def import_paths(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, import path) of each part of a resolved run config given by import path."""
    found = [
        ("policy", config["policy"]["name"]),
        ("throughput model", config["throughput"]),
        ("estimator", config["estimator"]["name"]),
    ]
    return [(kind, path) for kind, path in found if _is_user_path(kind, path)]


def _is_user_path(kind: str, name: Any) -> bool:
    if not _registry.is_import_path(name):
        return False
    # `learned:scaling`, `noisy:0.5`: a registered estimator with its argument
    return kind != "estimator" or name.partition(":")[0].lower() not in ESTIMATORS


def _user_no_arguments(kind: str, value: str, ctx: _Context, key: str) -> str:
    """Check a throughput model or estimator given by import path (made with no arguments)."""
    try:
        cls = user_class(kind, value, allow_imports=ctx.allow_imports)
        inspect.signature(cls).bind()
    except TypeError as exc:
        raise ctx.error(key, f"{kind} {value!r} must take no arguments: {exc}") from None
    except ValueError as exc:
        raise ctx.error(key, str(exc)) from None
    return value


def _throughput(value: Any, ctx: _Context, key: str) -> str:
    if isinstance(value, str) and _is_user_path("throughput model", value.strip()):
        return _user_no_arguments("throughput model", value.strip(), ctx, key)
    if value not in THROUGHPUT_MODELS:
        raise ctx.error(
            key, f"unknown throughput model {value!r}; choose one of {', '.join(THROUGHPUT_MODELS)}"
        )
    return str(value)


def _estimator(value: Any, ctx: _Context, key: str) -> dict[str, Any]:
    name = value.get("name") if isinstance(value, dict) else value
    if isinstance(name, str) and _is_user_path("estimator", name.strip()):
        if isinstance(value, dict) and len(value) > 1:
            extra = sorted(k for k in value if k != "name")[0]
            raise ctx.error(f"{key}.{extra}", "an estimator given by import path takes nothing")
        return {"name": _user_no_arguments("estimator", name.strip(), ctx, key)}
    if isinstance(value, str):
        name, _, arg = value.strip().lower().partition(":")
        spec: dict[str, Any] = {"name": name}
        if arg and name in ("learned", "predict", "dynamic"):  # learned:<prior>, predict:<p>,
            spec["name"] = f"{name}:{arg}"  # checked by make_estimator below
        elif arg:
            if name != "noisy":
                raise ctx.error(key, f"only the noisy estimator takes ':<sigma>', got {value!r}")
            try:
                spec["sigma"] = float(arg)
            except ValueError:
                raise ctx.error(
                    key, f"the sigma after 'noisy:' must be a number, got {arg!r}"
                ) from None
    elif isinstance(value, dict):
        _check_keys(value, ESTIMATOR_KEYS, ctx, key, "an estimator key")
        spec = dict(value)
        if not isinstance(spec.get("name"), str):
            raise ctx.error(f"{key}.name", "is missing; use 'oracle' or 'noisy'")
    else:
        raise ctx.error(
            key,
            f"must be 'oracle', 'noisy', 'noisy:<sigma>' or a mapping "
            f"{{name, sigma, sigma_throughput}}, got {value!r}",
        )
    return _estimator_spec(spec, ctx, key)


def _estimator_spec(spec: dict[str, Any], ctx: _Context, key: str) -> dict[str, Any]:
    name = spec["name"]
    if name == "noisy":
        default = NoisyEstimator()
        return {
            "name": "noisy",
            "sigma": _non_negative(spec.get("sigma", default.sigma), ctx, f"{key}.sigma"),
            "sigma_throughput": _non_negative(
                spec.get("sigma_throughput", default.sigma_throughput),
                ctx,
                f"{key}.sigma_throughput",
            ),
        }
    if name.startswith("predict") and "params" in spec:
        return _predicting_spec(spec, ctx, key)
    extra = sorted(set(spec) - {"name"})
    if extra:
        raise ctx.error(
            f"{key}.{extra[0]}",
            f"only the noisy estimator takes {extra[0]!r}; set name: noisy or remove it",
        )
    try:
        make_estimator(name)
    except (TypeError, ValueError) as exc:
        raise ctx.error(key, str(exc)) from None
    head, _, arg = name.strip().lower().partition(":")
    if head == "dynamic":  # one spelling, one key: `dynamic` is `dynamic:advance`
        return {"name": f"dynamic:{arg or 'advance'}"}
    return {"name": name}


def _predicting_spec(spec: dict[str, Any], ctx: _Context, key: str) -> dict[str, Any]:
    """``{name: predict:<predictor>, params: {...}}``: a predictor with its parameters."""
    from dlsched.perf.predicting import PredictingEstimator

    extra = sorted(set(spec) - {"name", "params"})
    if extra:
        raise ctx.error(f"{key}.{extra[0]}", "a predicting estimator takes only name and params")
    params = spec["params"]
    if not isinstance(params, dict):
        raise ctx.error(
            f"{key}.params", f"must be a mapping of predictor parameters, got {params!r}"
        )
    try:
        make_estimator(spec["name"])
        PredictingEstimator(spec["name"].partition(":")[2] or "helios", **params)
    except (TypeError, ValueError) as exc:
        raise ctx.error(f"{key}.params", str(exc)) from None
    return {"name": spec["name"], "params": dict(params)}


def _policies(value: Any, ctx: _Context) -> list[PolicyChoice]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ctx.error(
            "policies", "must be a non-empty list of policy names or {name, label, params} mappings"
        )
    choices = []
    for i, item in enumerate(value):
        where = f"policies[{i}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            raise ctx.error(where, "must be a policy name or a {name, label, params} mapping")
        _check_keys(item, POLICY_KEYS, ctx, where, "a policy key")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ctx.error(f"{where}.name", "is missing; see `dlsched policies` for the names")
        params = item.get("params") or {}
        if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
            raise ctx.error(f"{where}.params", "must be a mapping of parameter name to value")
        params = _json_safe(params, ctx, f"{where}.params")
        _check_policy(name, params, ctx, where)
        code = _digest(name, ctx) if _registry.is_import_path(name) else {}
        label = item.get("label", _default_label(name, params))
        if not isinstance(label, str) or not label.strip():
            raise ctx.error(f"{where}.label", f"must be non-empty text, got {_short(label)}")
        if not label.isprintable():  # a newline or control character breaks reports' tables
            raise ctx.error(
                f"{where}.label" if "label" in item else where,
                f"the label {_short(label)} holds a newline or another control character; "
                "give a 'label' of one line of plain text",
            )
        choices.append(PolicyChoice(label, name, params, code))
    labels = [c.label for c in choices]
    for i, label in enumerate(labels):
        if label in labels[:i]:
            raise ctx.error(
                f"policies[{i}]",
                f"has the same label {label!r} as "
                f"policies[{labels.index(label)}]; give one of them a distinct "
                "'label'",
            )
    return choices


def _default_label(name: str, params: Mapping[str, Any]) -> str:
    short = name.rpartition(":")[2] if ":" in name else name
    if not params:
        return short
    return f"{short}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def policy_factory(name: str, *, allow_imports: bool = False) -> Callable[..., Any]:
    """A policy class by registered name, or by import path ``package.module:Class``.

    The import path lets an experiment use a policy of your own without packaging it; the
    module must be importable by every worker. Importing it runs its code, so it is refused
    unless `allow_imports` (the experiment's opt-in), and it must name a class with a
    ``schedule`` method (`dlsched.policies.registry.import_policy`); nothing is constructed.
    """
    if _registry.is_import_path(name):
        return user_class("policy", name, allow_imports=allow_imports)
    return policies.registry.factory(name)


def _accepts(name: str, param: str, allow_imports: bool) -> bool:
    parameters = inspect.signature(policy_factory(name, allow_imports=allow_imports)).parameters
    return param in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def _check_policy(name: str, params: Mapping[str, Any], ctx: _Context, where: str) -> None:
    try:
        factory = policy_factory(name, allow_imports=ctx.allow_imports)
        policies.registry.check_params(name, factory, dict(params))
        if _registry.is_import_path(name):
            # the user's own class: checked against its signature, never called here
            try:
                inspect.signature(factory).bind(**params)
            except TypeError as exc:
                raise ValueError(f"policy {name!r}: {exc} (give it in params)") from None
        else:
            factory(**params)  # built-in constructors validate their parameters, do no work
    except (TypeError, ValueError) as exc:
        raise ctx.error(where, str(exc)) from None


def _replicates(value: Any, ctx: _Context) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_REPLICATES:
        raise ctx.error(
            "seeds",
            f"asks for {value:,} replicates, more than the cap of {MAX_REPLICATES:,}; "
            "give how many seeded replicates to run (e.g. seeds: 5)",
        )
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return tuple(range(value))
    if isinstance(value, list) and len(value) > MAX_REPLICATES:
        raise ctx.error(
            "seeds", f"lists {len(value):,} replicates, more than the cap of {MAX_REPLICATES:,}"
        )
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_REPLICATE_NUMBER
            for v in value
        )
        and len(set(value)) == len(value)
    ):
        return tuple(value)
    raise ctx.error(
        "seeds",
        f"must be how many seeded replicates to run (an integer >= 1) or "
        f"a list of distinct replicate numbers from 0 to {MAX_REPLICATE_NUMBER}, got "
        f"{_short(value)}",
    )


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _check_grid_size(
    n_policies: int, n_replicates: int, axes: Sequence[tuple[str, Sequence[Any]]], ctx: _Context
) -> None:
    """Refuse a grid of more than `MAX_GRID_CELLS` cells before expanding it."""
    cells = n_policies * n_replicates * math.prod(len(values) for _, values in axes)
    if cells > MAX_GRID_CELLS:
        sizes = " × ".join(
            [f"{n_policies} policies", f"{n_replicates} seeds"]
            + [f"{len(values)} {axis}" for axis, values in axes]
        )
        raise ctx.error(
            "sweep" if axes else "seeds",
            f"makes a grid of {cells:,} cells ({sizes}), more than the cap of "
            f"{MAX_GRID_CELLS:,}; split the study into several experiment files",
        )


def _sweep(
    value: Any, ctx: _Context, choices: Sequence[PolicyChoice]
) -> tuple[list[tuple[str, tuple[Any, ...]]], list[tuple[str, list[Any]]]]:
    """(axis, values as shown in reports) and (axis, resolved values), in file order."""
    if not isinstance(value, dict):
        raise ctx.error(
            "sweep",
            "must be a mapping of axis to a list of values, e.g. "
            "{workload.arrival_rate_scale: [1, 2]}",
        )
    shown_axes: list[tuple[str, tuple[Any, ...]]] = []
    resolved_axes: list[tuple[str, list[Any]]] = []
    for axis, values in value.items():
        key = f"sweep.{axis}"
        if not isinstance(axis, str) or not (
            axis in SWEEPABLE or (axis.startswith("params.") and len(axis) > len("params."))
        ):
            raise ctx.error(
                key,
                f"cannot be swept{did_you_mean(axis, SWEEPABLE)}; sweep one of "
                f"{', '.join(SWEEPABLE)} or params.<name> (a policy parameter)",
            )
        if not isinstance(values, list) or not values:
            raise ctx.error(key, "must be a non-empty list of values")
        if axis.startswith("params."):
            param = axis.removeprefix("params.")
            if not any(_accepts(c.name, param, ctx.allow_imports) for c in choices):
                raise ctx.error(
                    key,
                    f"no policy of this experiment takes a parameter "
                    f"{param!r}; check the spelling against the policies' "
                    "parameters",
                )
        resolved = [_axis_value(axis, v, ctx, f"{key}[{i}]") for i, v in enumerate(values)]
        shown = tuple(_shown(axis, v, r) for v, r in zip(values, resolved, strict=True))
        if len(set(map(canonical_json, resolved))) != len(resolved):
            raise ctx.error(key, "lists the same value twice; remove the repeat")
        for i, label in enumerate(shown):
            if label in shown[:i]:  # two different values that reports would mix up
                first = shown.index(label)
                what = "name" if axis in ("cluster", "workload.trace") else "label"
                raise ctx.error(
                    f"{key}[{i}]",
                    f"has the same {what} {label!r} as {key}[{first}] but differs from it; "
                    + (
                        "give the clusters distinct names"
                        if axis == "cluster"
                        else "give the traces distinct file names"
                        if axis == "workload.trace"
                        else "make the values distinct"
                    ),
                )
        shown_axes.append((axis, shown))
        resolved_axes.append((axis, resolved))
    return shown_axes, resolved_axes


def _axis_value(axis: str, value: Any, ctx: _Context, key: str) -> Any:
    if axis == "cluster":
        return _cluster(value, ctx, key)
    if axis == "workload.trace":
        return _trace(value, ctx, key)
    if axis == "workload.format":
        return _format(value, ctx, key)
    if axis == "workload.lenient":
        return _bool(value, ctx, key)
    if axis == "workload.transforms":
        return _transforms(value, ctx, key)
    if axis == "workload.arrival_rate_scale":
        return _positive(value, ctx, key)
    if axis == "throughput":
        return _throughput(value, ctx, key)
    if axis == "estimator":
        return _estimator(value, ctx, key)
    if axis in ("estimator.sigma", "estimator.sigma_throughput", "restart_overhead_s"):
        return _non_negative(value, ctx, key)
    return _json_safe(value, ctx, key)  # params.<name>: checked per policy in _combine


def _shown(axis: str, raw: Any, resolved: Any) -> Any:
    """A sweep value as reports show it: a number, a name or short text."""
    if axis == "cluster":
        return resolved["name"]
    if axis == "workload.trace":
        return resolved["name"]
    if axis == "estimator":
        sigma = resolved.get("sigma")
        return resolved["name"] if sigma is None else f"noisy:{sigma:g}"
    if isinstance(raw, (bool, int, float, str)) or raw is None:
        return raw
    return canonical_json(resolved)


def _combine(
    base: Mapping[str, Any],
    choice: PolicyChoice,
    seed: int,
    setting: Sequence[tuple[str, Any, Any, str]],
    ctx: _Context,
    resample: bool = False,
) -> dict[str, Any]:
    """The resolved config of one cell (`resample`: seeded transforms draw per replicate)."""
    config = json.loads(canonical_json(base))  # a deep copy
    params = dict(choice.params)
    param_key = None
    for axis, value, _, key in setting:
        section, _, leaf = axis.partition(".")
        if section == "params":
            if _accepts(choice.name, leaf, ctx.allow_imports):
                params[leaf] = value
                param_key = key
        elif section == "estimator" and leaf:
            if config["estimator"]["name"] != "noisy":
                raise ctx.error(
                    key,
                    f"sets the noise of the estimator, but the estimator is "
                    f"{config['estimator']['name']!r}; set estimator: noisy",
                )
            config["estimator"][leaf] = value
        elif leaf:
            config[section][leaf] = value
        else:
            config[section] = value
    workload = config["workload"]
    if resample:
        for index, step in enumerate(workload["transforms"]):
            if "seed" in step:
                step["seed"] = workload_seed(step["seed"], seed, index)
    if workload["format"] == "auto":  # pin it, so that naming the format changes no key
        workload["format"] = _detect(workload["trace"]["path"], ctx, "workload.format")
    if param_key is not None:
        _check_policy_cached(
            choice.name, canonical_json(params), ctx.source, param_key, ctx.allow_imports
        )
    config["policy"] = {"name": choice.name, "params": params}
    config["seed"] = seed
    code = _code(config, ctx)
    if code:  # only then: the keys of runs of registered names stay as they were
        config["code"] = code
    swept = dict((axis, key) for axis, _, _, key in setting)
    scheduled = _probe(config, ctx, swept)
    _dynamic_config(config, scheduled, ctx, swept)
    return config


def _dynamic_config(
    config: dict[str, Any], scheduled: bool, ctx: _Context, swept: Mapping[str, str]
) -> None:
    """Record in the run config that a workload with a ``batch_schedule`` column runs on the
    dynamic truth (`dlsched.experiments.dynamic`), so that its key differs from a run that
    ignored the column; refuse the dynamic options on a workload without one."""
    from dlsched.experiments.dynamic import is_dynamic_estimator

    unmeasured = config.pop("unmeasured_batch", None)
    if scheduled:
        config["batch_schedule"] = {"unmeasured": unmeasured or "error"}
        return
    if is_dynamic_estimator(config["estimator"]["name"]):
        raise ctx.error(
            swept.get("estimator", "estimator"),
            f"{config['estimator']['name']!r} sees batch-size schedules, but the workload has "
            "no batch_schedule column; add one to the trace or with the transform "
            "{batch_schedules: {seed: 0}}",
        )
    if unmeasured is not None:
        raise ctx.error(
            "unmeasured_batch",
            "applies to batch-size schedules, but the workload has no batch_schedule column; "
            "remove the key or add the column (transform batch_schedules)",
        )


@lru_cache(maxsize=1024)
def _check_policy_cached(
    name: str, params_json: str, source: str, where: str, allow_imports: bool
) -> None:
    _check_policy(name, json.loads(params_json), _Context(source, allow_imports), where)


def _digest(path: str, ctx: _Context) -> dict[str, str]:
    if path not in ctx.digests:
        ctx.digests[path] = _registry.code_digest(path)
    return ctx.digests[path]


def _code(config: Mapping[str, Any], ctx: _Context) -> dict[str, str]:
    """The SHA-256 of the source of every module a run's import paths come from."""
    code: dict[str, str] = {}
    for _, path in import_paths(config):
        code.update(_digest(path, ctx))
    return code


PROBE_WORKLOADS = 2
"""How many loaded traces validation holds at once (a sweep over traces loads each once)."""


def _probe(config: Mapping[str, Any], ctx: _Context, swept: Mapping[str, str]) -> bool:
    """Do now what the run of `config` would do before it simulates — load the trace in its
    format, apply the transforms, convert the jobs for the cluster and the throughput model
    — and raise the error a run would meet, naming the key it comes from (`swept`: the
    sweep key of each swept axis). Once per distinct workload: a transform's seed changes
    which jobs it draws, never whether it works, so every seed shares one probe.

    Returns whether the workload has a ``batch_schedule`` column (a run on the dynamic
    truth, `dlsched.experiments.dynamic`)."""
    spec = config["workload"]
    steps: list[dict[str, Any]] = [
        {k: 0 if k == "seed" else v for k, v in step.items()} for step in spec["transforms"]
    ]
    trace = spec["trace"]
    load_key = canonical_json([trace["sha256"], trace["path"], spec["format"], spec["lenient"]])
    probe_key = canonical_json([load_key, steps, config["cluster"], config["throughput"]])
    if probe_key in ctx.probed:
        return ctx.scheduled[probe_key]
    where = {axis: swept.get(axis, axis) for axis in ("workload.format", "workload.transforms")}
    workload = _probe_load(load_key, spec, ctx, where["workload.format"])
    for i, step in enumerate(steps):
        key = f"{where['workload.transforms']}[{i}]"
        if step["name"] == "sample" and step["n"] > len(workload):
            before = "the trace has" if i == 0 else "the transforms before it leave"
            raise ctx.error(
                key,
                f"samples {step['n']:,} jobs, but {before} {len(workload):,} "
                f"({trace['name']}); ask for at most {len(workload):,}",
            )
        function, _ = TRANSFORMS[step["name"]]
        try:
            workload = function(workload, **{k: v for k, v in step.items() if k != "name"})
        except (DlschedError, ValueError) as exc:
            raise ctx.error(key, _without_content(exc)) from None
    from dlsched.experiments.dynamic import dynamic_truth, has_schedules

    scheduled = has_schedules(workload)
    ctx.scheduled[probe_key] = scheduled
    if (
        str(config["throughput"]).startswith("goodput")
        or spec["format"] == "sia-pollux"
        or _is_user_path("throughput model", config["throughput"])
    ):
        # `simulate` picks the goodput model and its profiles for the first two; the user's
        # own model is not made before its run
        if scheduled and not _is_user_path("throughput model", config["throughput"]):
            try:  # refuses the goodput models and duration, naming them
                dynamic_truth(workload, config["throughput"])
            except (DlschedError, ValueError) as exc:
                raise ctx.error(swept.get("throughput", "throughput"), str(exc)) from None
        ctx.probed.add(probe_key)
        return scheduled
    from dlsched.engine.specs import build_specs  # the engine: only once an experiment loads

    cluster_key = swept.get("cluster", "cluster")
    truth = None
    if scheduled:
        try:
            truth = dynamic_truth(workload, config["throughput"])
        except (DlschedError, ValueError) as exc:
            raise ctx.error(swept.get("throughput", "throughput"), str(exc)) from None
    try:
        cluster = Cluster.from_dict(config["cluster"], f"cluster {config['cluster']['name']!r}")
        if truth is None:
            truth = THROUGHPUT_MODELS.get(config["throughput"])()
        build_specs(workload, cluster, truth, bool(spec["lenient"]))
    except (DlschedError, ValueError, KeyError) as exc:
        blame = swept.get("throughput", "throughput")
        key = blame if getattr(exc, "field", None) == "model" else cluster_key
        raise ctx.error(
            key,
            f"a run would stop before it starts: {_without_content(exc)}",
        ) from None
    ctx.probed.add(probe_key)
    return scheduled


def _probe_load(load_key: str, spec: Mapping[str, Any], ctx: _Context, key: str) -> Any:
    """The run's trace, loaded as the run will load it (the last `PROBE_WORKLOADS` kept)."""
    if load_key in ctx.workloads:
        ctx.workloads.move_to_end(load_key)
        return ctx.workloads[load_key]
    from dlsched.traces import load_trace

    path = spec["trace"]["path"]
    try:
        workload = load_trace(path, format=spec["format"], lenient=bool(spec["lenient"]))
    except (DlschedError, ValueError, OSError) as exc:
        raise ctx.error(
            key,
            f"the trace does not load as format {spec['format']!r}: {_without_content(exc)}",
        ) from None
    ctx.workloads[load_key] = workload
    while len(ctx.workloads) > PROBE_WORKLOADS:
        ctx.workloads.popitem(last=False)
    return workload


def _without_content(exc: BaseException) -> str:
    """An error's message without what it quotes of a file: the values a trace row held
    (``got ...``) are left out; the file, row and field stay, so the user can look."""
    if isinstance(exc, TraceError) and exc.row is not None:
        where = [str(exc.path)] if exc.path is not None else []
        where.append(f"row {exc.row}")
        if exc.field is not None:
            where.append(f"field {exc.field!r}")
        return f"{', '.join(where)}: {_unquoted(exc.reason)}"
    return _unquoted(str(exc)) if isinstance(exc, TraceError) else str(exc)


def _unquoted(message: str) -> str:
    """`message` without the value it quotes (what follows ``, got``, dlsched's spelling)."""
    return message.split(", got ")[0]


def _check_keys(
    value: Mapping[Any, Any],
    allowed: Sequence[str] | Mapping[str, Any],
    ctx: _Context,
    where: str,
    what: str,
) -> None:
    """Refuse the first key of `value` not in `allowed`, naming it with a did-you-mean."""
    for k in value:
        if k not in allowed:
            raise ctx.error(
                f"{where}.{k}",
                f"is not {what}{did_you_mean(k, list(allowed))}; the keys are {', '.join(allowed)}",
            )


def _bool(value: Any, ctx: _Context, key: str) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(key, f"must be true or false, got {value!r}")
    return value


def _number(value: Any, ctx: _Context, key: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ctx.error(key, f"must be {what}, got {value!r}")
    return float(value)


def _positive(value: Any, ctx: _Context, key: str) -> float:
    number = _number(value, ctx, key, "a number > 0")
    if not number > 0:
        raise ctx.error(key, f"must be a number > 0, got {value!r}")
    return number


def _non_finite(value: Any, key: str, depth: int = 0) -> tuple[str, float] | None:
    """(key, value) of the first inf or NaN in `value`, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return key, value
    if depth < 20 and isinstance(value, dict):
        found = (_non_finite(v, f"{key}.{k}", depth + 1) for k, v in value.items())
        return next((f for f in found if f is not None), None)
    if depth < 20 and isinstance(value, list):
        found = (_non_finite(v, f"{key}[{i}]", depth + 1) for i, v in enumerate(value))
        return next((f for f in found if f is not None), None)
    return None


def _overheads(value: Any, ctx: _Context, key: str) -> str:
    """`overheads: elasticflow`: a preset of `dlsched.overheads.PRESETS` by name."""
    from dlsched.overheads import PRESETS

    if not isinstance(value, str) or value not in PRESETS:
        raise ctx.error(
            key,
            f"must be an overhead preset name{did_you_mean(value, PRESETS)}: {', '.join(PRESETS)}",
        )
    return value


def _provisioner(value: Any, ctx: _Context, key: str) -> dict[str, Any]:
    """`provisioner: on_demand` or `{name: on_demand, <parameter>: value, ...}`, checked by
    building it (`dlsched.provision.get`): ``{"name", "params"}``."""
    from dlsched.provision import PROVISIONERS, get

    params: dict[str, Any] = {}
    if isinstance(value, dict):
        params = {k: v for k, v in value.items() if k != "name"}
        value = value.get("name")
    if not isinstance(value, str) or value not in PROVISIONERS:
        raise ctx.error(
            key,
            f"must be a provisioner name{did_you_mean(value, PROVISIONERS)}: "
            f"{', '.join(PROVISIONERS)} (or a mapping with 'name' and its parameters)",
        )
    try:
        get(value, **params)
    except (TypeError, ValueError) as exc:
        raise ctx.error(key, str(exc)) from None
    return {"name": value, "params": params}


def _unmeasured_batch(value: Any, ctx: _Context) -> str:
    """`unmeasured_batch: error | samples` (`dlsched.experiments.dynamic`)."""
    from dlsched.experiments.dynamic import UNMEASURED

    if value not in UNMEASURED:
        raise ctx.error(
            "unmeasured_batch",
            f"must be one of {', '.join(UNMEASURED)} (what a batch size the throughput model "
            f"has not measured runs at), got {value!r}",
        )
    return str(value)


def _non_negative(value: Any, ctx: _Context, key: str) -> float:
    number = _number(value, ctx, key, "a number >= 0")
    if number < 0:
        raise ctx.error(key, f"must be a number >= 0, got {value!r}")
    return number


def _json_safe(value: Any, ctx: _Context, key: str) -> Any:
    where = _non_finite(value, key)
    if where is not None and where[1] != where[1]:  # inf is a value ("never"); NaN is none
        raise ctx.error(where[0], "is nan, which is no number; give a number")
    try:
        return json.loads(canonical_json(value))
    except (TypeError, ValueError):
        raise ctx.error(
            key,
            "must hold only plain YAML values (numbers, text, true/false, "
            "lists and mappings with text keys)",
        ) from None
