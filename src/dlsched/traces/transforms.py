"""Workload transforms: each returns a new ``Workload`` and records itself in provenance.

Every transform leaves its input untouched, keeps the canonical column order and the
``(submit_time, job_id)`` sort, and appends one JSON-serialisable entry (its name, its
parameters, its seed when it draws random numbers, and what it changed) to
``provenance["transforms"]``. Randomness comes only from
``numpy.random.default_rng(seed)`` with the ``seed`` the caller passes, so one seed gives
one result, on every machine.

>>> from dlsched.traces import load_trace
>>> from dlsched.bundled import bundled_trace
>>> w = load_trace(bundled_trace("tiresias_60_job.csv"))
>>> small = sample_jobs(time_window(w, 0, 900), 10, seed=1)
>>> len(small), [t["name"] for t in small.provenance["transforms"]]
(10, ['time_window', 'sample_jobs'])

One function here is not a transform: `history_features` extracts, from a workload, the
features a history-based duration predictor learns from (user, VC, job-name tokens, GPU
count, submit hour and weekday); `job_history_features` is the same for one job, which is
what the predictors of `dlsched.predict` use, one job at a time.
"""

from __future__ import annotations

import copy
import datetime
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import ConfigError
from dlsched.traces.schema import MAX_TIME_S, constraint_types, duration_columns, type_key
from dlsched.traces.workload import Workload

GAVEL_JOB_TYPES: tuple[str, ...] = (
    "ResNet-18 (batch size 16)",
    "ResNet-18 (batch size 32)",
    "ResNet-18 (batch size 64)",
    "ResNet-18 (batch size 128)",
    "ResNet-18 (batch size 256)",
    "ResNet-50 (batch size 16)",
    "ResNet-50 (batch size 32)",
    "ResNet-50 (batch size 64)",
    "ResNet-50 (batch size 128)",
    "Transformer (batch size 16)",
    "Transformer (batch size 32)",
    "Transformer (batch size 64)",
    "Transformer (batch size 128)",
    "Transformer (batch size 256)",
    "LM (batch size 5)",
    "LM (batch size 10)",
    "LM (batch size 20)",
    "LM (batch size 40)",
    "LM (batch size 80)",
    "Recommendation (batch size 512)",
    "Recommendation (batch size 1024)",
    "Recommendation (batch size 2048)",
    "Recommendation (batch size 4096)",
    "Recommendation (batch size 8192)",
    "A3C",
    "CycleGAN",
)
"""Gavel's 26 job types (``scheduler/job_table.py``; the keys of its throughput oracle)."""

GAVEL_DISTRIBUTED_JOB_TYPES: tuple[str, ...] = tuple(
    t for t in GAVEL_JOB_TYPES if t.startswith(("ResNet", "Transformer", "LM"))
)
"""The 19 of them that Gavel runs on more than one GPU (oracle entries at 2, 4 and 8 GPUs)."""

Seed = int

NAME_TOKENS = 2
"""How many leading job-name tokens are features (the rest rarely generalise)."""

HISTORY_FEATURES: tuple[str, ...] = (
    "user",
    "vc",
    *(f"name_token_{i}" for i in range(NAME_TOKENS)),
    "num_gpus",
    "submit_hour",
    "submit_weekday",
)
"""The columns of `history_features`, in order (and of `job_history_features`' values)."""

HISTORY_CATEGORICAL: tuple[bool, ...] = tuple(
    name in ("user", "vc") or name.startswith("name_token_") for name in HISTORY_FEATURES
)
"""Which of `HISTORY_FEATURES` are categories (text) rather than numbers."""

_TOKEN_SPLIT = re.compile(r"[^0-9A-Za-z]+")


def name_tokens(name: str | None) -> list[str]:
    """The lower-case alphanumeric tokens of a job name, numbers dropped (run ids, dates).

    >>> name_tokens("BERT-large_ft.v2-20200901")
    ['bert', 'large', 'ft', 'v2']
    """
    if not name:
        return []
    return [t for t in _TOKEN_SPLIT.split(name.lower()) if t and not t.isdigit()]


def job_history_features(
    *,
    user: str | None,
    vc: str | None,
    name: str | None,
    num_gpus: float,
    submit_time: float,
) -> tuple[str | float | None, ...]:
    """One job's `HISTORY_FEATURES`: what a job's history says about it at submission.

    User and VC as given (None: not traced); the first `NAME_TOKENS` tokens of its name
    (`name_tokens`; None where it has fewer); its GPU count; the hour of day (0-23) and day
    of week (0-6, counted from the trace's day 0) of ``submit_time`` on the trace's axis (a
    trace whose time 0 is not midnight shifts them, which a tree model does not mind).

    >>> job_history_features(user="u1", vc=None, name="bert-ft-3", num_gpus=4,
    ...                      submit_time=2 * 86400 + 5 * 3600 + 60)
    ('u1', None, 'bert', 'ft', 4.0, 5.0, 2.0)
    """
    tokens = name_tokens(name)[:NAME_TOKENS]
    padded: list[str | None] = [*tokens, *([None] * (NAME_TOKENS - len(tokens)))]
    return (
        user,
        vc,
        *padded,
        float(num_gpus),
        float(math.floor(submit_time % 86400 / 3600)),
        float(int(submit_time // 86400) % 7),
    )


def history_features(workload: Workload | pd.DataFrame) -> pd.DataFrame:
    """The `HISTORY_FEATURES` of every job of a workload (or of its job table), one row per
    job in the table's order, indexed by ``job_id``.

    Category columns are text with None where the trace has no value (a trace without
    users, VCs or job names gives all-None columns: the table's columns are always the
    same); ``num_gpus``, ``submit_hour`` and ``submit_weekday`` are numbers. A job name is
    read from the ``name`` column (Helios' ``jobname``, PAI's group tag, a canonical file's
    ``name``). Features only: no duration, so nothing a predictor may not know.

    >>> jobs = pd.DataFrame({"job_id": ["a"], "submit_time": [3600.0], "num_gpus": [2],
    ...                      "user": ["u"], "name": ["resnet50_lr0.1"]})
    >>> history_features(jobs).to_dict("records")[0]  # doctest: +NORMALIZE_WHITESPACE
    {'user': 'u', 'vc': None, 'name_token_0': 'resnet50', 'name_token_1': 'lr0',
     'num_gpus': 2.0, 'submit_hour': 1.0, 'submit_weekday': 0.0}
    """
    jobs = workload.jobs if isinstance(workload, Workload) else workload
    for column in ("job_id", "submit_time", "num_gpus"):
        if column not in jobs.columns:
            raise ConfigError(f"history_features: the job table has no {column!r} column")

    def texts(column: str) -> list[str | None]:
        if column not in jobs.columns:
            return [None] * len(jobs)
        return [None if _missing(v) else str(v) for v in jobs[column].tolist()]

    rows = [
        job_history_features(user=u, vc=v, name=n, num_gpus=g, submit_time=t)
        for u, v, n, g, t in zip(
            texts("user"),
            texts("vc"),
            texts("name"),
            jobs["num_gpus"].tolist(),
            jobs["submit_time"].tolist(),
            strict=True,
        )
    ]
    table = pd.DataFrame(rows, columns=list(HISTORY_FEATURES), index=jobs["job_id"].to_numpy())
    table.index.name = "job_id"
    for column, categorical in zip(HISTORY_FEATURES, HISTORY_CATEGORICAL, strict=True):
        if categorical:
            table[column] = table[column].astype(object).where(table[column].notna(), None)
    return table


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def time_window(
    workload: Workload,
    start: float | str | pd.Timestamp | None = None,
    end: float | str | pd.Timestamp | None = None,
    *,
    rebase: bool = True,
) -> Workload:
    """Keep the jobs submitted in ``[start, end)``; with ``rebase``, ``start`` becomes time 0.

    ``start`` and ``end`` are seconds on the workload's time axis, or dates
    (``"2017-10-04 00:00:00"``) when the loader recorded ``provenance["time_origin"]``.
    Deadlines move with their jobs.
    """
    start_s = _seconds(workload, start, "start")
    end_s = _seconds(workload, end, "end")
    if start_s is not None and end_s is not None and end_s < start_s:
        raise ConfigError(f"time_window: end ({end_s}) is before start ({start_s})")
    jobs = workload.jobs
    keep = np.ones(len(jobs), dtype=bool)
    if start_s is not None:
        keep &= jobs["submit_time"].to_numpy() >= start_s
    if end_s is not None:
        keep &= jobs["submit_time"].to_numpy() < end_s
    out = jobs.loc[keep].copy()
    shift = start_s if (rebase and start_s is not None) else 0.0
    if shift:
        out["submit_time"] = out["submit_time"] - shift
        out["deadline"] = out["deadline"] - shift
    entry = {
        "name": "time_window",
        "start_s": start_s,
        "end_s": end_s,
        "rebase": rebase,
        "jobs_kept": int(keep.sum()),
        "jobs_dropped": int((~keep).sum()),
    }
    result = _derive(workload, out, entry)
    if shift and result.provenance.get("time_origin"):
        origin = pd.Timestamp(result.provenance["time_origin"]) + pd.Timedelta(seconds=shift)
        result.provenance["time_origin"] = origin.strftime("%Y-%m-%d %H:%M:%S")
    return result


def scale_arrival_rate(workload: Workload, factor: float) -> Workload:
    """Multiply the arrival rate by ``factor``: gaps between submissions shrink by it.

    The first submission stays where it is; each deadline keeps its slack (deadline −
    submit). ``factor`` 2 packs the same jobs into half the time.
    """
    _positive("scale_arrival_rate", "factor", factor)
    out = workload.jobs.copy()
    submit = out["submit_time"].to_numpy()
    first = float(submit.min()) if len(submit) else 0.0
    slack = out["deadline"].to_numpy() - submit
    out["submit_time"] = first + (submit - first) / factor
    out["deadline"] = out["submit_time"].to_numpy() + slack
    entry = {"name": "scale_arrival_rate", "factor": float(factor)}
    return _derive(workload, out, entry)


def sample_jobs(workload: Workload, n: int, *, seed: Seed) -> Workload:
    """``n`` jobs drawn without replacement, uniformly, keeping their submit order."""
    if not (_is_whole(n) and 0 <= n <= len(workload)):
        raise ConfigError(
            f"sample_jobs: n must be a whole number between 0 and {len(workload)} (the "
            f"workload's jobs), got {n!r}"
        )
    n = int(n)
    rng = np.random.default_rng(_seed("sample_jobs", seed))
    picked = np.sort(rng.choice(len(workload), size=n, replace=False))
    entry = {"name": "sample_jobs", "n": int(n), "seed": seed}
    return _derive(workload, workload.jobs.iloc[picked], entry)


def assign_models(
    workload: Workload,
    *,
    seed: Seed,
    models: Sequence[str] | Mapping[str, float] | None = None,
    overwrite: bool = True,
) -> Workload:
    """Give jobs a model drawn from a distribution (Gavel's job mix by default).

    Default: as Gavel's trace generator does, a one-GPU job gets one of the 26
    ``GAVEL_JOB_TYPES`` uniformly, and a multi-GPU job one of the 19
    ``GAVEL_DISTRIBUTED_JOB_TYPES`` uniformly (Gavel redraws until the type can run
    distributed, which is the same distribution). ``models`` may instead be a list of names
    (uniform) or a mapping of name to weight, for every job. With ``overwrite=False`` only
    jobs without a model get one.
    """
    rng = np.random.default_rng(_seed("assign_models", seed))
    jobs = workload.jobs.copy()
    target = np.ones(len(jobs), dtype=bool) if overwrite else jobs["model"].isna().to_numpy()
    chosen = np.empty(len(jobs), dtype=object)
    if models is None:
        multi = jobs["num_gpus"].to_numpy() > 1
        single_pick = rng.integers(0, len(GAVEL_JOB_TYPES), size=len(jobs))
        multi_pick = rng.integers(0, len(GAVEL_DISTRIBUTED_JOB_TYPES), size=len(jobs))
        chosen[:] = np.where(
            multi,
            np.asarray(GAVEL_DISTRIBUTED_JOB_TYPES, dtype=object)[multi_pick],
            np.asarray(GAVEL_JOB_TYPES, dtype=object)[single_pick],
        )
        distribution: Any = "gavel"
    else:
        names, weights = _distribution(models)
        chosen[:] = np.asarray(names, dtype=object)[
            rng.choice(len(names), size=len(jobs), p=weights)
        ]
        distribution = dict(zip(names, (float(w) for w in weights), strict=True))
    model = jobs["model"].to_numpy(dtype=object, copy=True)
    model[target] = chosen[target]
    jobs["model"] = pd.Series(model, dtype=object)
    entry = {
        "name": "assign_models",
        "seed": seed,
        "distribution": distribution,
        "overwrite": overwrite,
        "jobs_assigned": int(target.sum()),
    }
    return _derive(workload, jobs, entry)


def assign_deadlines(
    workload: Workload,
    low: float,
    high: float,
    *,
    seed: Seed,
    fraction: float = 1.0,
    overwrite: bool = True,
    durations: Sequence[float] | np.ndarray | None = None,
) -> Workload:
    """Deadline = submit + U(low, high) × duration, for a ``fraction`` of the jobs.

    The recipe of Chronus (SoCC '21) and Hydra (TC '23; U(1.2, 3.0) for 20–30 % of the jobs).
    A job's duration is ``durations[i]`` when given (aligned with ``workload.jobs``), else its
    ``duration``, else its fastest ``duration_<type>``. Each job is picked with probability
    ``fraction``; the others keep (``overwrite=False``) or lose (``overwrite=True``) the
    deadline they had. A picked job with no duration is an error naming it.
    """
    _positive("assign_deadlines", "low", low)
    _positive("assign_deadlines", "high", high)
    if not low <= high:
        raise ConfigError(f"assign_deadlines: need 0 < low <= high, got {low}, {high}")
    if not (_is_number(fraction) and 0 <= fraction <= 1):
        raise ConfigError(
            f"assign_deadlines: fraction must be a number from 0 to 1, got {fraction!r}"
        )
    jobs = workload.jobs.copy()
    n = len(jobs)
    if durations is not None:
        try:
            basis = np.asarray(durations, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError("assign_deadlines: durations must be numbers (seconds)") from None
        if basis.shape != (n,):
            raise ConfigError(f"assign_deadlines: durations has {basis.size} values for {n} jobs")
    else:
        basis = reference_durations(jobs)
    rng = np.random.default_rng(_seed("assign_deadlines", seed))
    picked = rng.random(n) < fraction
    factor = rng.uniform(low, high, size=n)
    deadline = jobs["deadline"].to_numpy(copy=True)
    target = picked if overwrite else picked & np.isnan(deadline)
    missing = target & ~(basis > 0)
    if missing.any():
        first = _plain(jobs["job_id"].iat[int(np.flatnonzero(missing)[0])])
        raise ConfigError(
            f"assign_deadlines: job {first!r} has no duration (only steps?); pass "
            f"durations=... (seconds per job, from a throughput model)"
        )
    endless = target & ~np.isfinite(basis)
    if endless.any():
        first = _plain(jobs["job_id"].iat[int(np.flatnonzero(endless)[0])])
        raise ConfigError(
            f"assign_deadlines: durations must be finite, job {first!r} has "
            f"{basis[int(np.flatnonzero(endless)[0])]!r}"
        )
    if overwrite:
        deadline[:] = np.nan
    submit = jobs["submit_time"].to_numpy()
    deadline[target] = submit[target] + factor[target] * basis[target]
    jobs["deadline"] = deadline
    entry = {
        "name": "assign_deadlines",
        "low": float(low),
        "high": float(high),
        "fraction": float(fraction),
        "overwrite": overwrite,
        "seed": seed,
        "durations": "given" if durations is not None else "from the trace",
        "jobs_with_deadline": int((~np.isnan(deadline)).sum()),
    }
    return _derive(workload, jobs, entry)


def reference_durations(jobs: pd.DataFrame) -> np.ndarray:
    """Each job's ``duration``, or its fastest ``duration_<type>`` when it has none."""
    basis = jobs["duration"].to_numpy(dtype=np.float64, copy=True)
    typed = list(duration_columns(jobs.columns).values())
    if typed:
        fastest = np.fmin.reduce([jobs[c].to_numpy(dtype=np.float64) for c in typed])
        basis = np.where(np.isnan(basis), fastest, basis)
    return basis


def cap_gpu_demand(
    workload: Workload,
    cluster: Any,
    *,
    mode: str = "clip",
    duration: str = "keep_gpu_time",
) -> Workload:
    """Make every job fit the cluster: at most the GPUs of the largest GPU type it may use.

    ``cluster`` is a ``dlsched.cluster.Cluster`` (a job may use the types its
    ``gpu_constraint`` allows, else any; a gang uses one type) or a number of GPUs.
    ``mode="clip"`` lowers ``num_gpus`` to the cap; ``mode="drop"`` removes those jobs. When
    clipping, ``duration="keep_gpu_time"`` stretches ``duration`` and the ``duration_<type>``
    columns by old/new GPUs (GPU-time is kept, as under linear scaling); ``"keep"`` leaves
    them. CPU and memory demands (``cpu_milli``, ``memory_mib``) of a clipped job shrink in
    proportion, rounded up. Jobs whose constraint allows no type of the cluster are dropped
    in either mode.
    """
    if mode not in ("clip", "drop"):
        raise ConfigError(f"cap_gpu_demand: mode must be 'clip' or 'drop', got {mode!r}")
    if duration not in ("keep_gpu_time", "keep"):
        raise ConfigError(
            f"cap_gpu_demand: duration must be 'keep_gpu_time' or 'keep', got {duration!r}"
        )
    if isinstance(cluster, (bool, np.bool_, numbers.Number)) and not _at_least_one(cluster):
        raise ConfigError(
            f"cap_gpu_demand: cluster must be a Cluster or a whole number of GPUs >= 1, got "
            f"{cluster!r}"
        )
    jobs = workload.jobs.copy()
    cap = _caps(jobs, cluster)
    gpus = jobs["num_gpus"].to_numpy()
    nowhere = cap == 0
    over = (gpus > cap) & ~nowhere
    drop = nowhere | (over if mode == "drop" else np.zeros(len(jobs), dtype=bool))
    if mode == "clip" and over.any():
        new = np.where(over, cap, gpus)
        if duration == "keep_gpu_time":
            stretch = gpus / new
            for column in ["duration", *duration_columns(jobs.columns).values()]:
                jobs[column] = jobs[column].to_numpy() * stretch
        # The whole-job CPU/memory demand shrinks with the GPUs (the same per-GPU demand,
        # rounded up as the ledger rounds an elastic job's), or the clipped job would ask
        # its fewer GPUs' nodes for more cores per GPU than the trace did.
        for column in ("cpu_milli", "memory_mib"):
            if column in jobs.columns:
                demand = jobs[column].to_numpy(np.int64)
                jobs[column] = np.where(over, -(-demand * new // gpus), demand)
        jobs["num_gpus"] = new.astype(np.int64)
    out = jobs.loc[~drop]
    label = int(cluster) if isinstance(cluster, (int, np.integer)) else str(cluster.name)
    entry = {
        "name": "cap_gpu_demand",
        "cluster": label,
        "mode": mode,
        "duration": duration,
        "jobs_clipped": int(over.sum()) if mode == "clip" else 0,
        "jobs_dropped": int(drop.sum()),
        "jobs_without_allowed_type": int(nowhere.sum()),
    }
    return _derive(workload, out, entry)


def make_elastic(
    workload: Workload,
    *,
    min_gpus: int = 1,
    max_gpus: int | None = None,
    max_factor: float | None = None,
) -> Workload:
    """Let a policy re-scale every job: set ``min_gpus`` and ``max_gpus`` (elastic bounds).

    ``min_gpus`` is capped at each job's ``num_gpus``. The upper bound is ``max_gpus``, or
    ``max_factor`` × ``num_gpus`` (rounded down), or (neither) the job's own ``num_gpus``; it
    is never below ``num_gpus``. Work stays as traced: how fast a job runs on another count
    is the throughput model's business (the ``duration`` model knows no scaling). Jobs
    without GPUs (``num_gpus`` 0, CPU/memory only) stay rigid: their bounds are left empty.
    """
    if not (_is_whole(min_gpus) and 1 <= min_gpus <= _MAX_GPUS):
        raise ConfigError(f"make_elastic: min_gpus must be a whole number >= 1, got {min_gpus!r}")
    if max_gpus is not None and max_factor is not None:
        raise ConfigError("make_elastic: give max_gpus or max_factor, not both")
    if max_factor is not None and not (
        _is_number(max_factor) and math.isfinite(max_factor) and max_factor >= 1
    ):
        raise ConfigError(
            f"make_elastic: max_factor must be a finite number >= 1, got {max_factor!r}"
        )
    if max_gpus is not None and not (_is_whole(max_gpus) and 1 <= max_gpus <= _MAX_GPUS):
        raise ConfigError(f"make_elastic: max_gpus must be a whole number >= 1, got {max_gpus!r}")
    jobs = workload.jobs.copy()
    gpus = jobs["num_gpus"].to_numpy()
    jobs["min_gpus"] = np.minimum(gpus, min_gpus).astype(float)
    if max_gpus is not None:
        high = np.maximum(gpus, max_gpus)
    elif max_factor is not None:
        high = np.minimum(np.maximum(gpus, np.floor(gpus * max_factor)), _MAX_GPUS)
    else:
        high = gpus
    jobs["max_gpus"] = high.astype(float)
    without_gpus = gpus == 0  # no GPU to scale (the schema refuses bounds on such a job)
    if without_gpus.any():
        jobs.loc[without_gpus, ["min_gpus", "max_gpus"]] = np.nan
    entry = {
        "name": "make_elastic",
        "min_gpus": int(min_gpus),
        "max_gpus": None if max_gpus is None else int(max_gpus),
        "max_factor": None if max_factor is None else float(max_factor),
    }
    return _derive(workload, jobs, entry)


def tile(workload: Workload, k: int, *, offset_s: float | None = None) -> Workload:
    """``k`` copies of the workload, copy i shifted by ``i × offset_s`` seconds (labelled tiled).

    A large *stand-in* built from real jobs, not a larger real trace: the provenance says
    ``tiled`` and the passthrough column ``tile`` gives each job's copy (0 = original).
    ``offset_s`` defaults to the trace's span plus its mean gap between submissions, so
    copies follow one another; 0 stacks them (Sia's ``scale_kx`` workloads do that for k×
    larger clusters). Integer ids of copy i are shifted by i × (max − min + 1); text ids get
    ``#i``.
    """
    if not (_is_whole(k) and k >= 1):
        raise ConfigError(f"tile: k must be a positive integer, got {k!r}")
    k = int(k)
    jobs = workload.jobs
    submit = jobs["submit_time"].to_numpy()
    if offset_s is None:
        span = float(submit.max() - submit.min()) if len(submit) else 0.0
        offset_s = span + (span / (len(submit) - 1) if len(submit) > 1 else 0.0)
    if not (_is_number(offset_s) and math.isfinite(offset_s) and offset_s >= 0):
        raise ConfigError(f"tile: offset_s must be a finite number >= 0, got {offset_s!r}")
    integer_ids = pd.api.types.is_integer_dtype(jobs["job_id"].dtype)
    stride = (
        int(jobs["job_id"].max()) - int(jobs["job_id"].min()) + 1
        if integer_ids and len(jobs)
        else 0
    )
    copies = []
    for i in range(k):
        part = jobs.copy()
        part["submit_time"] = part["submit_time"] + i * offset_s
        part["deadline"] = part["deadline"] + i * offset_s
        if i:
            part["job_id"] = (
                part["job_id"] + i * stride if integer_ids else part["job_id"].astype(str) + f"#{i}"
            )
        if "tile" in part.columns:  # tiling a tiled workload: copies of copies
            part["tile"] = part["tile"] + i * (int(jobs["tile"].max()) + 1)
        else:
            part.insert(_before_source_row(part), "tile", np.full(len(part), i, dtype=np.int64))
        copies.append(part)
    out = pd.concat(copies, ignore_index=True)
    entry = {
        "name": "tile",
        "k": k,
        "offset_s": float(offset_s),
        "tiled": True,
        "note": "k time-shifted copies of the same jobs: a stand-in, not a real trace",
    }
    result = _derive(workload, out, entry)
    result.provenance["tiled"] = True
    return result


def filter_jobs(
    workload: Workload,
    *,
    vc: str | Iterable[str] | None = None,
    user: str | Iterable[str] | None = None,
    status: str | Iterable[str] | None = None,
    predicate: Callable[[pd.DataFrame], Any] | None = None,
) -> Workload:
    """Keep the jobs matching every given criterion.

    ``vc``, ``user`` and ``status`` take one value or several; ``predicate`` takes the job
    table and returns a boolean mask (``lambda j: j["num_gpus"] <= 8``).
    """
    jobs = workload.jobs
    keep = np.ones(len(jobs), dtype=bool)
    entry: dict[str, Any] = {"name": "filter_jobs"}
    for column, wanted in (("vc", vc), ("user", user), ("status", status)):
        if wanted is None:
            continue
        values = [wanted] if isinstance(wanted, str) else [str(v) for v in wanted]
        keep &= jobs[column].isin(values).to_numpy()
        entry[column] = values
    if predicate is not None:
        mask = np.asarray(predicate(jobs), dtype=bool)
        if mask.shape != (len(jobs),):
            raise ConfigError(
                f"filter_jobs: predicate returned {mask.shape}, expected ({len(jobs)},)"
            )
        keep &= mask
        entry["predicate"] = getattr(predicate, "__qualname__", repr(predicate))
    entry["jobs_kept"] = int(keep.sum())
    entry["jobs_dropped"] = int((~keep).sum())
    return _derive(workload, jobs.loc[keep], entry)


def _derive(workload: Workload, jobs: pd.DataFrame, entry: dict[str, Any]) -> Workload:
    """A new workload of ``jobs`` (re-sorted) with ``entry`` appended to the transforms."""
    _check_times(jobs, entry)
    provenance = copy.deepcopy(workload.provenance)
    provenance.setdefault("transforms", []).append(_plain(entry))
    jobs = jobs.sort_values(["submit_time", "job_id"], kind="stable", ignore_index=True)
    return Workload(jobs, provenance)


def _plain(value: Any) -> Any:
    """JSON-serialisable copy: numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


_MAX_GPUS = 2**31 - 1  # as the schema's bound on num_gpus


def _is_number(value: Any) -> bool:
    """A real number (numpy's too), never a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_whole(value: Any) -> bool:
    """A whole number (``3``, ``np.int64(3)``, ``3.0``), never a bool, NaN or inf."""
    return _is_number(value) and math.isfinite(value) and float(value) == int(value)


def _at_least_one(value: Any) -> bool:
    """A whole number >= 1."""
    return _is_whole(value) and value >= 1


def _positive(transform: str, parameter: str, value: Any) -> None:
    """Raise unless ``value`` is a positive, finite number."""
    if not (_is_number(value) and math.isfinite(value) and value > 0):
        raise ConfigError(
            f"{transform}: {parameter} must be a positive, finite number, got {value!r}"
        )


def _seed(transform: str, seed: Any) -> Any:
    """``seed`` if numpy takes it as a seed: a whole number >= 0 or a SeedSequence."""
    if isinstance(seed, (np.random.SeedSequence, np.random.Generator)):
        return seed
    if not (_is_whole(seed) and seed >= 0):
        raise ConfigError(f"{transform}: seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


def _check_times(jobs: pd.DataFrame, entry: Mapping[str, Any]) -> None:
    """Raise if a transform's parameters moved times off the axis the schema allows (finite,
    >= 0, below ``schema.MAX_TIME_S``, where float64 seconds still resolve 1 ms)."""
    for column in ("submit_time", "deadline"):
        if column not in jobs.columns or not len(jobs):
            continue
        values = jobs[column].to_numpy(dtype=np.float64)
        bad = ~np.isnan(values) & ~((values >= 0) & (values < MAX_TIME_S))
        if column == "submit_time":
            bad |= np.isnan(values)
        if bad.any():
            params = ", ".join(
                f"{k}={v!r}" for k, v in entry.items() if k != "name" and not k.startswith("jobs_")
            )
            raise ConfigError(
                f"{entry['name']}: with {params}, a job's {column} becomes "
                f"{values[bad][0]!r}; times must be >= 0, finite and below 2^43 s (about "
                "8.8e12 s, where float64 seconds still resolve 1 ms): choose smaller values"
            )


def _seconds(workload: Workload, value: Any, what: str) -> float | None:
    if value is None:
        return None
    if _is_number(value):
        if not math.isfinite(value):
            raise ConfigError(
                f"time_window: {what} must be a finite number of seconds or a date, got {value!r}"
            )
        return float(value)
    if not isinstance(value, (str, datetime.datetime, np.datetime64)):
        raise ConfigError(f"time_window: {what} must be seconds or a date, got {value!r}")
    origin = workload.provenance.get("time_origin")
    if not isinstance(origin, str):
        raise ConfigError(
            f"time_window: {what} {value!r} is a date, but this workload has no "
            "time origin (provenance['time_origin']); give seconds"
        )
    try:
        seconds = (pd.Timestamp(value) - pd.Timestamp(origin)).total_seconds()
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"time_window: {what} {value!r} is not a date like '2017-10-04 00:00:00' ({exc})"
        ) from None
    if not math.isfinite(seconds):  # NaT
        raise ConfigError(f"time_window: {what} must be a date, got {value!r}")
    return seconds


def _distribution(models: Sequence[str] | Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    if isinstance(models, Mapping):
        names = [str(m) for m in models]
        for model, weight in models.items():
            if not (_is_number(weight) and math.isfinite(weight) and weight >= 0):
                raise ConfigError(
                    f"assign_models: the weight of model {model!r} must be a finite number "
                    f">= 0, got {weight!r}"
                )
        weights = np.asarray([float(w) for w in models.values()], dtype=np.float64)
    else:
        names = [str(m) for m in models]
        weights = np.ones(len(names))
    if not names or (weights < 0).any() or not 0 < weights.sum() < math.inf:
        raise ConfigError(
            "assign_models: models must name at least one model with a positive weight"
        )
    return names, weights / weights.sum()


def _caps(jobs: pd.DataFrame, cluster: Any) -> np.ndarray:
    """Per job, the most GPUs it could get: of one allowed type (0: no allowed type)."""
    if isinstance(cluster, (int, np.integer)):
        return np.full(len(jobs), int(cluster), dtype=np.int64)
    capacity = {type_key(t): int(c) for t, c in cluster.capacity_by_type().items()}
    largest = max(capacity.values(), default=0)
    caps = np.full(len(jobs), largest, dtype=np.int64)
    constraints = jobs["gpu_constraint"].to_numpy(dtype=object)
    where = np.flatnonzero(pd.notna(constraints))
    cache: dict[str, int] = {}
    for i in where:
        text = constraints[i]
        if text not in cache:
            allowed = constraint_types(text) or tuple(capacity)
            cache[text] = max((capacity.get(t, 0) for t in allowed), default=0)
        caps[i] = cache[text]
    return caps


def _before_source_row(jobs: pd.DataFrame) -> int:
    columns = list(jobs.columns)
    return columns.index("source_row") if "source_row" in columns else len(columns)
