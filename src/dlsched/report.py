"""Reports on an experiment's results: summary tables (CSV + Markdown) and PNG plots.

``write_report("results/quickstart")`` reads the grid that ``dlsched run`` recorded and writes,
into the same directory:

- ``summary.csv`` — one row per policy and sweep point: mean of every summary metric over the
  seeded replicates (plus the standard deviation of average JCT and makespan);
- ``runs.csv`` — one row per grid cell (policy, replicate, sweep values, run key, status);
- ``summary.md`` — the table, the failed and missing runs, and the plots;
- ``wall_times.csv`` — simulator and scheduler wall time per run (the only numbers that
  change when the same experiment runs again);
- plots: ``jct_cdf.png``, ``avg_jct_vs_load.png``, ``queueing_delay.png``,
  ``gpu_utilization.png``, ``policy_bars.png`` and, when jobs have deadlines,
  ``deadline_satisfaction.png``; with ``formats=("png", "pdf", "svg")`` (``dlsched report
  --format png,pdf --dpi 300``) each also as a vector file for a paper. Times are shown in
  the unit their values need (s, min, h, days), on a log axis where they span more than two
  decades; curves differ in marker and line style as well as colour, and sit a little apart
  where they would cover each other; long numbers in labels are written short (``1e8``).

When a run's cluster declares CPU cores or host memory (node groups' ``cpus``,
``host_memory_gb``), the report also shows every resource's utilisation: the summary tables
get ``cpu_utilization``, ``memory_utilization`` (time-mean share held over the makespan),
their ``peak_*`` and ``gpu_busy_utilization`` / ``peak_gpu_utilization`` (see
`dlsched.utilisation`), ``summary.md`` a section "Utilisation by resource", and
``resource_utilization.png`` plots GPUs, cores and memory held over time. Jobs' demands are
read from the run's workload (rebuilt from its stored config: the trace must still be where,
and what, it was). A GPU-only experiment's report is what it was.

When runs have energy figures (their cluster file has an ``energy:`` section,
`dlsched.energy`), ``power.png`` plots the cluster's power draw over time, one panel per
policy variant, and the summary tables carry ``energy_kwh``, ``mean_power_w`` and the rest.

When runs rent instances through a provisioner that plans per job (``cynthia``,
``cost_optimal``: ``meta.json``'s ``rented.jobs``) and their jobs have deadlines,
``cost_deadline.png`` plots each finished job's attributed cost against its deadline slack
(deadline − finish; filled: met, hollow: missed), one colour per policy variant
(`rented_job_costs` gives the table).

"Load" is the arrival-rate scale (``workload.arrival_rate_scale``) when it is swept, else
the first numeric sweep axis; other sweep axes split a policy into variants
("srtf, estimator.sigma=0.5").
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from dlsched.atomic import save_figure, write_csv, write_text
from dlsched.cluster import Cluster
from dlsched.errors import DlschedError, ResultsError, did_you_mean
from dlsched.experiments.store import ResultsStore

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_T = TypeVar("_T")

LOAD_AXIS = "workload.arrival_rate_scale"
PLOTS = (
    "jct_cdf.png",
    "avg_jct_vs_load.png",
    "queueing_delay.png",
    "gpu_utilization.png",
    "policy_bars.png",
)
DEADLINE_PLOT = "deadline_satisfaction.png"
RESOURCE_PLOT = "resource_utilization.png"
POWER_PLOT = "power.png"
COST_DEADLINE_PLOT = "cost_deadline.png"
_MD_METRICS = (
    ("avg_jct", "avg JCT (s)"),
    ("p95_jct", "p95 JCT (s)"),
    ("makespan", "makespan (s)"),
    ("avg_queueing_delay", "avg queueing (s)"),
    ("utilization", "utilisation"),
    ("preemptions", "preemptions"),
    ("deadline_satisfaction", "deadlines met"),
    ("cost", "cost"),
)
_MAX_PANELS = 6
#: Formats `write_report` can write each plot in, and the resolution of raster ones.
FORMATS = ("png", "pdf", "svg")
DEFAULT_DPI = 110


_RERUN = "delete that run's folder and `dlsched run` the experiment again to re-run it"


def _stored(path: Path, read: Callable[[], _T], remedy: str = _RERUN) -> _T:
    """`read()` of a stored file, its failures turned into a `ResultsError` naming `path`."""
    try:
        return read()
    except FileNotFoundError as exc:
        if exc.filename is None:  # the reader's own sentence (no experiment.json) says it best
            raise
        raise ResultsError(f"{path}: missing; {remedy}") from None
    except ResultsError:  # (already names its folder and file)
        raise
    except (OSError, ValueError) as exc:  # unreadable, not JSON, not parquet
        raise ResultsError(f"{path}: unreadable ({exc}); {remedy}") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_summary(path: Path, summary: Any) -> dict[str, Any]:
    """A run's stored summary: a mapping of metric names to numbers (or null)."""
    if not isinstance(summary, dict):
        raise ResultsError(
            f"{path}: a summary is a mapping of metric to number, not a "
            f"{type(summary).__name__}; {_RERUN}"
        )
    for metric, value in summary.items():
        if value is not None and not _is_number(value):
            raise ResultsError(f"{path}: {metric!r} is {value!r}, not a number; {_RERUN}")
    return summary


def _check_manifest(path: Path, manifest: Any) -> dict[str, Any]:
    """The grid `dlsched run` recorded: the fields a report reads, with their types."""
    remedy = "run the experiment again with `dlsched run` to rewrite it"

    def bad(what: str) -> ResultsError:
        return ResultsError(f"{path}: {what}; {remedy}")

    if not isinstance(manifest, dict):
        raise bad(f"expected a mapping, found a {type(manifest).__name__}")
    kinds: dict[str, type | tuple[type, ...]] = {
        "name": str,
        "axes": list,
        "points": list,
        "policies": list,
        "replicates": list,
        "runs": int,
    }
    for key, kind in kinds.items():
        if not isinstance(manifest.get(key), kind):
            raise bad(
                f"{key!r} is {manifest.get(key)!r}, expected a {getattr(kind, '__name__', kind)}"
            )
    for i, axis in enumerate(manifest["axes"]):
        if not (
            isinstance(axis, list)
            and len(axis) == 2
            and isinstance(axis[0], str)
            and isinstance(axis[1], list)
        ):
            raise bad(f"axes[{i}] is {axis!r}, expected [name, [values]]")
    for i, point in enumerate(manifest["points"]):
        if not (
            isinstance(point, dict)
            and isinstance(point.get("key"), str)
            and isinstance(point.get("policy"), str)
            and isinstance(point.get("axes"), dict)
            and "replicate" in point
        ):
            raise bad(f"points[{i}] is {point!r}, expected {{key, policy, replicate, axes}}")
    return manifest


@dataclass
class ReportData:
    """An experiment's stored results, one row per grid cell, ready for tables and plots."""

    store: ResultsStore
    manifest: dict[str, Any]
    cells: pd.DataFrame  # policy, replicate, <axes>, key, status, load, variant, <metrics>
    load_axis: str
    variants: list[str]
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, tuple[pd.DataFrame, dict[str, float]]] = field(default_factory=dict)
    """Run key → (`resource_timeline`, `resource_capacity`) of the runs whose cluster declares
    CPU or memory (filled by `add_resource_figures`)."""
    resource_notes: list[str] = field(default_factory=list)
    """Why some runs have no CPU/memory figures (their workload could not be rebuilt)."""

    @property
    def axes(self) -> list[str]:
        """The sweep axes, in file order."""
        return [name for name, _ in self.manifest["axes"]]

    @property
    def done(self) -> pd.DataFrame:
        """The cells whose run finished."""
        return self.cells[self.cells["status"] == "finished"]


def collect(results_dir: str | os.PathLike[str]) -> ReportData:
    """Read the grid and every stored run summary of a results directory."""
    store = ResultsStore(results_dir)
    manifest_path = store.root / "experiment.json"
    manifest = _check_manifest(
        manifest_path,
        _stored(manifest_path, store.read_manifest, "run the experiment again to rewrite it"),
    )
    axes = [name for name, _ in manifest["axes"]]
    load_axis = _load_axis(manifest)
    failures = _stored(store.failures_dir, store.failures, "delete the damaged failure record")
    for key, failure in failures.items():
        if not isinstance(failure, dict) or not isinstance(failure.get("error"), str):
            raise ResultsError(
                f"{store.failures_dir / key}.json: not a failure record (a mapping with an "
                "'error' message); delete it"
            )
    rows = []
    for point in manifest["points"]:
        key = point["key"]
        row: dict[str, Any] = {
            "policy": point["policy"],
            "replicate": point["replicate"],
            **{a: point["axes"].get(a) for a in axes},
            "key": key,
        }
        if store.is_finished(key):
            row["status"] = "finished"
            row["load"] = (
                point["axes"].get(load_axis) if load_axis in axes else _stored_load(store, key)
            )
            path = store.run_dir(key) / "summary.json"
            row.update(_check_summary(path, _stored(path, partial(store.run_summary, key))))
        else:
            row["status"] = "failed" if key in failures else "missing"
        rows.append(row)
    cells = pd.DataFrame(rows)
    others = [a for a in axes if a != load_axis]
    cells["variant"] = [_variant(r, others) for r in rows]
    variants = list(dict.fromkeys(cells["variant"]))
    if "load" not in cells.columns:
        cells["load"] = math.nan
    return ReportData(
        store,
        manifest,
        cells,
        load_axis,
        variants,
        {k: v for k, v in failures.items() if k in set(cells["key"])},
    )


def _stored_load(store: ResultsStore, key: str) -> Any:
    """The arrival-rate scale a stored run was configured with."""
    path = store.run_dir(key) / "config.json"
    config = _stored(path, lambda: store.run_config(key))
    try:
        scale = config["workload"]["arrival_rate_scale"]
    except (KeyError, TypeError):
        raise ResultsError(f"{path}: no workload.arrival_rate_scale; {_RERUN}") from None
    if not _is_number(scale):
        raise ResultsError(
            f"{path}: workload.arrival_rate_scale is {scale!r}, not a number; {_RERUN}"
        )
    return scale


def _load_axis(manifest: dict[str, Any]) -> str:
    names = [name for name, _ in manifest["axes"]]
    if LOAD_AXIS in names:
        return LOAD_AXIS
    for name, values in manifest["axes"]:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return str(name)
    return LOAD_AXIS


def _variant(row: Mapping[str, Any], others: Sequence[str]) -> str:
    extra = ", ".join(f"{a}={_short(row[a])}" for a in others)
    return f"{row['policy']}, {extra}" if extra else str(row["policy"])


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _metric_columns(data: ReportData) -> list[str]:
    skip = {"policy", "replicate", "key", "status", "load", "variant", *data.axes}
    cells = data.cells
    return [
        c
        for c in cells.columns
        if c not in skip and not c.endswith("wall_s") and pd.api.types.is_numeric_dtype(cells[c])
    ]


def summary_table(data: ReportData) -> pd.DataFrame:
    """Mean of each metric over replicates, per policy and sweep point (grid order)."""
    done = data.done
    axes = data.axes
    metrics = _metric_columns(data)
    groups = ["policy", *axes]
    if done.empty:
        return pd.DataFrame(columns=[*groups, "runs", *metrics])
    order = {
        v: i
        for i, v in enumerate(
            dict.fromkeys(tuple(r) for r in data.cells[groups].astype(str).itertuples(index=False))
        )
    }
    out = []
    for values, group in done.groupby([done[g].astype(str) for g in groups], sort=False):
        first = group.iloc[0]
        row: dict[str, Any] = {g: first[g] for g in groups}
        row["runs"] = len(group)
        for metric in metrics:
            row[metric] = float(group[metric].mean()) if group[metric].notna().any() else math.nan
            if metric in ("avg_jct", "makespan"):
                row[f"{metric}_sd"] = float(group[metric].std(ddof=1)) if len(group) > 1 else 0.0
        row["_order"] = order[tuple(values)]
        out.append(row)
    table = pd.DataFrame(out).sort_values("_order").drop(columns="_order")
    return table.reset_index(drop=True)


def write_report(
    results_dir: str | os.PathLike[str],
    *,
    formats: Sequence[str] = ("png",),
    dpi: float = DEFAULT_DPI,
) -> list[Path]:
    """Write the tables and plots into `results_dir`; return the files written.

    Each plot is written once per format of `formats` (``png``, ``pdf``, ``svg``: vector
    formats for papers), raster ones at `dpi` dots per inch; ``summary.md`` shows the PNG
    (or SVG) of each, and links a PDF where it is the only format."""
    chosen = check_formats(formats)
    if not (isinstance(dpi, (int, float)) and not isinstance(dpi, bool) and 20 <= dpi <= 1200):
        raise ValueError(f"dpi must be a number from 20 to 1200, got {dpi!r}")
    data = collect(results_dir)
    add_resource_figures(data)
    root = data.store.root
    written = []
    table = summary_table(data)
    write_csv(root / "summary.csv", table)
    runs = data.cells.drop(columns=[c for c in data.cells.columns if c.endswith("wall_s")])
    write_csv(root / "runs.csv", runs)
    walls = data.cells[
        [
            c
            for c in ("policy", "replicate", "key", "sim_wall_s", "scheduler_wall_s")
            if c in data.cells.columns
        ]
    ]
    write_csv(root / "wall_times.csv", walls)
    written += [root / "summary.csv", root / "runs.csv", root / "wall_times.csv"]
    plots = [name for name in PLOTS]
    if (
        "deadline_satisfaction" in data.cells.columns
        and data.cells["deadline_satisfaction"].notna().any()
    ):
        plots.append(DEADLINE_PLOT)
    if not data.done.empty:
        jobs = _job_tables(data)
        figures = {
            "jct_cdf.png": lambda: _plot_jct_cdf(data, jobs),
            "avg_jct_vs_load.png": lambda: _plot_vs_load(data),
            "queueing_delay.png": lambda: _plot_queueing(data, jobs),
            "gpu_utilization.png": lambda: _plot_utilization(data),
            "policy_bars.png": lambda: _plot_bars(data),
            DEADLINE_PLOT: lambda: _plot_deadlines(data),
            RESOURCE_PLOT: lambda: _plot_resources(data),
            POWER_PLOT: lambda: _plot_power(data),
        }
        if data.resources:
            plots.append(RESOURCE_PLOT)
        if _has_energy(data):
            plots.append(POWER_PLOT)
        costs = rented_job_costs(data)
        if not costs.empty:
            figures[COST_DEADLINE_PLOT] = lambda: _plot_cost_deadline(data, costs)
            plots.append(COST_DEADLINE_PLOT)
        for name in plots:
            written += _save(figures[name](), root / name, chosen, dpi)
    shown = [_shown_name(name, chosen) for name in plots] if not data.done.empty else []
    write_text(root / "summary.md", _markdown(data, table, shown))
    written.append(root / "summary.md")
    return written


# ---- CPU and memory ---------------------------------------------------------------------
_RESOURCE_METRICS = (
    "gpu_busy_utilization",
    "peak_gpu_utilization",
    "cpu_utilization",
    "peak_cpu_utilization",
    "memory_utilization",
    "peak_memory_utilization",
)


def add_resource_figures(data: ReportData) -> None:
    """Add every resource's utilisation (`dlsched.utilisation.utilisation_summary`) to the
    finished cells whose cluster declares CPU cores or host memory, and keep each such run's
    timeline in `data.resources`; nothing changes for GPU-only clusters."""
    from dlsched.utilisation import resource_capacity, resource_timeline, utilisation_summary

    figures: dict[str, dict[str, float]] = {}
    clusters: dict[str, Cluster] = {}
    workloads: dict[str, Any] = {}
    for key in dict.fromkeys(data.done["key"]):
        config = _stored(
            data.store.run_dir(key) / "config.json", partial(data.store.run_config, key)
        )
        cluster_json = json.dumps(config["cluster"], sort_keys=True)
        if cluster_json not in clusters:
            clusters[cluster_json] = Cluster.from_dict(config["cluster"])
        cluster = clusters[cluster_json]
        if not (cluster.declares_cpus or cluster.declares_memory):
            continue
        result = _stored(data.store.run_dir(key), partial(data.store.load_run, key))
        demands = None
        if not {"cpu_milli", "memory_mib"} & set(result.jobs.columns):
            workload_json = json.dumps(config["workload"], sort_keys=True)
            if workload_json not in workloads:
                workloads[workload_json] = _workload(config)
            demands = workloads[workload_json]
            if isinstance(demands, str):
                data.resource_notes.append(f"`{key}`: {demands}")
                continue
        timeline = resource_timeline(result, cluster, demands)
        figures[key] = utilisation_summary(result, cluster, timeline=timeline)
        data.resources[key] = (timeline, resource_capacity(cluster))
    if not figures:
        return
    names = [m for m in _RESOURCE_METRICS if any(m in f for f in figures.values())]
    cells = data.cells
    for name in names:
        cells[name] = [figures.get(key, {}).get(name, math.nan) for key in cells["key"]]


def _workload(config: Mapping[str, Any]) -> Any:
    """The workload of a stored run's config, or why it cannot be rebuilt (a sentence)."""
    from dlsched.experiments.runner import build_workload

    try:
        return build_workload(config)
    except (DlschedError, OSError) as exc:
        return (
            f"no CPU/memory figures: its workload could not be rebuilt ({exc}); put the trace "
            "back where the experiment found it"
        )


# ---- Markdown ---------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _md_line(value: Any) -> str:
    """`value` as one line of Markdown text: newlines and other control characters, which
    would end a table row or a list item, become a space."""
    return _CONTROL.sub(" ", _short(value))


def _md_cell(value: Any) -> str:
    """`value` as the text of one Markdown table cell: on one line, its ``|`` escaped (a
    label or sweep value holding one would otherwise split its cell in two)."""
    return _md_line(value).replace("|", "\\|")


def _md_row(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(_md_cell(c) for c in cells) + " |"


def _markdown(data: ReportData, table: pd.DataFrame, plots: Sequence[str]) -> str:
    m = data.manifest
    cells = data.cells
    lines = [f"# {m['name']}", ""]
    if m.get("description"):
        lines += [m["description"], ""]
    counts = cells.drop_duplicates("key")["status"].value_counts()
    lines += [
        f"{len(cells)} grid cells, {m['runs']} distinct runs: "
        f"{counts.get('finished', 0)} finished, {counts.get('failed', 0)} failed, "
        f"{counts.get('missing', 0)} not run. "
        f"Policies: {', '.join(_md_line(p) for p in m['policies'])}; "
        f"replicates: {len(m['replicates'])} (root seed {m['seed']}).",
        "",
    ]
    if m["axes"]:
        lines += [
            "Sweep: "
            + "; ".join(
                f"`{_md_line(a)}` ∈ {{{', '.join(_md_line(v) for v in values)}}}"
                for a, values in m["axes"]
            ),
            "",
        ]
    axes = [name for name, _ in m["axes"]]
    metrics = [(k, label) for k, label in _MD_METRICS if k in table.columns]
    header = ["policy", *axes, "runs", *(label for _, label in metrics)]
    lines += [
        "Means over replicates.",
        "",
        _md_row(header),
        "|" + "|".join("---" if i < 1 + len(axes) else "---:" for i in range(len(header))) + "|",
    ]
    for row in table.to_dict("records"):
        cells_md = [row["policy"], *(row[a] for a in axes), row["runs"]]
        for key, _ in metrics:
            cells_md.append(_md_number(key, row[key], row.get(f"{key}_sd")))
        lines.append(_md_row(cells_md))
    lines.append("")
    lines += _resource_markdown(data, table)
    if data.failures:
        lines += ["## Failed runs", ""]
        for key, failure in sorted(data.failures.items()):
            labels = cells[cells["key"] == key].iloc[0]
            lines.append(
                f"- `{key}` ({_md_line(labels['variant'])}, replicate {labels['replicate']}): "
                f"{_md_line(failure['error'])} — traceback in `failures/{key}.json`"
            )
        lines.append("")
    missing = cells[cells["status"] == "missing"].drop_duplicates("key")
    if len(missing):
        lines += [
            "## Not run yet",
            "",
            f"{len(missing)} runs are not stored; "
            "`dlsched run` the experiment again to finish them.",
            "",
        ]
    if plots:
        lines += ["## Plots", ""]
        lines += [
            f"[{Path(name).stem} (PDF)]({name})"
            if name.endswith(".pdf")
            else f"![{Path(name).stem}]({name})"
            for name in plots
        ]
        lines.append("")
    return "\n".join(lines)


def _resource_markdown(data: ReportData, table: pd.DataFrame) -> list[str]:
    """The "Utilisation by resource" section (none for a GPU-only experiment)."""
    if not data.resources and not data.resource_notes:
        return []
    lines = ["## Utilisation by resource", ""]
    columns = [
        (key, label)
        for key, label in (
            ("utilization", "GPU"),
            ("gpu_busy_utilization", "GPUs busy"),
            ("cpu_utilization", "CPU"),
            ("peak_cpu_utilization", "CPU peak"),
            ("memory_utilization", "memory"),
            ("peak_memory_utilization", "memory peak"),
        )
        if key in table.columns
    ]
    if data.resources:
        sizes = sorted(
            {
                ", ".join(
                    f"{capacity[r]:,.6g} {_UNITS[r]}"
                    for r in ("gpu", "cpu", "memory")
                    if r in capacity
                )
                for _, capacity in data.resources.values()
            }
        )
        lines += [
            "Time-mean share of each resource that jobs held over the makespan (means over "
            "replicates); a peak is the largest share held at any instant. GPU is the "
            "summary's GPU-seconds utilisation, GPUs busy the share of GPUs with any job. "
            "CPU and memory count the nodes that declare them "
            f"(cluster: {'; '.join(sizes)}).",
            "",
        ]
        axes = data.axes
        header = ["policy", *axes, "runs", *(label for _, label in columns)]
        lines += [
            _md_row(header),
            "|"
            + "|".join("---" if i < 1 + len(axes) else "---:" for i in range(len(header)))
            + "|",
        ]
        for row in table.to_dict("records"):
            if all(_missing(row.get(k)) for k, _ in columns if k != "utilization"):
                continue
            text = [row["policy"], *(row[a] for a in axes), row["runs"]]
            text += [_md_number(k, row[k]) for k, _ in columns]
            lines.append(_md_row(text))
        lines.append("")
    lines += [f"- {note}" for note in data.resource_notes]
    if data.resource_notes:
        lines.append("")
    return lines


_UNITS = {"gpu": "GPUs", "cpu": "cores", "memory": "GB of host memory"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _md_number(key: str, value: Any, sd: Any = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if key.endswith("utilization") or key == "deadline_satisfaction":
        return f"{100 * value:.1f} %"
    if key == "preemptions":
        return f"{value:,.1f}"
    text = f"{value:,.1f}"
    if sd is not None and not (isinstance(sd, float) and math.isnan(sd)) and sd > 0:
        text += f" ± {sd:,.1f}"
    return text


# ---- output formats ---------------------------------------------------------------------
def check_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """The plot formats asked for, checked: ``"png,pdf"`` or ``["svg"]`` (no duplicates)."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    chosen: list[str] = []
    for item in items:
        name = str(item).strip().lower().lstrip(".")
        if name not in FORMATS:
            raise ValueError(
                f"plot format {item!r} is not one of {', '.join(FORMATS)}"
                f"{did_you_mean(name, FORMATS)}"
            )
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise ValueError(f"give at least one plot format of {', '.join(FORMATS)}")
    return tuple(chosen)


_UNDATED: dict[str, dict[str, Any]] = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def _save(fig: Figure, png_path: Path, formats: Sequence[str], dpi: float) -> list[Path]:
    """Write `fig` beside `png_path` once per format; return the files written."""
    out = []
    for fmt in formats:
        path = png_path.with_suffix(f".{fmt}")
        # no creation date: the same results give the same PDF (SVGs still differ in the ids
        # matplotlib derives from object addresses)
        metadata = (
            {"CreationDate": None} if fmt == "pdf" else {"Date": None} if fmt == "svg" else {}
        )
        save_figure(fig, path, dpi=dpi, format=fmt, metadata=metadata)
        out.append(path)
    return out


def _shown_name(png_name: str, formats: Sequence[str]) -> str:
    """The file of a plot that summary.md shows: its PNG, else its SVG, else its PDF."""
    for fmt in ("png", "svg", "pdf"):
        if fmt in formats:
            return str(Path(png_name).with_suffix(f".{fmt}"))
    return png_name


# ---- readable axes and labels -----------------------------------------------------------
#: (unit, seconds) from the smallest: a time axis uses the largest unit its values reach twice.
_TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0))
#: Markers and line styles cycled with the colours, so that curves on top of each other
#: still show apart (and read in black and white).
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", "-.", ":")


def time_unit(values: Any) -> tuple[str, float]:
    """The unit for an axis of seconds: ``("h", 3600.0)`` when the largest value is at
    least two hours (and under two days).

    >>> time_unit([30.0, 5000.0]), time_unit([175000.0]), time_unit([90.0])
    (('min', 60.0), ('days', 86400.0), ('s', 1.0))
    """
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    top = float(np.abs(finite).max()) if finite.size else 0.0
    unit = _TIME_UNITS[0]
    for candidate in _TIME_UNITS[1:]:
        if top >= 2 * candidate[1]:
            unit = candidate
    return unit


def spans_decades(values: Any, decades: float = 2.0) -> bool:
    """Whether the positive `values` span more than `decades` powers of ten (log axis).

    >>> spans_decades([10, 50, 20000]), spans_decades([100, 900])
    (True, False)
    """
    array = np.asarray(values, dtype=float)
    positive = array[np.isfinite(array) & (array > 0)]
    return bool(positive.size) and float(np.log10(positive.max() / positive.min())) > decades


def short_label(label: str) -> str:
    """A variant label with long numbers written short: ``srgtf(starve_s=1e8)``.

    >>> short_label("srgtf(starve_s=100000000)"), short_label("fifo, estimator.sigma=0.5")
    ('srgtf(starve_s=1e8)', 'fifo, estimator.sigma=0.5')
    """
    return re.sub(r"(?<![\w.])\d{6,}(?:\.\d+)?(?![\w.])", lambda m: _short_number(m.group()), label)


def _short_number(text: str) -> str:
    value = float(text)
    mantissa, exponent = f"{value:e}".split("e")
    digits = mantissa.rstrip("0").rstrip(".")
    return f"{digits}e{int(exponent)}"


def _style(data: ReportData, variant: str) -> dict[str, Any]:
    """Colour, marker and line style of a variant (the same in every plot)."""
    i = data.variants.index(variant)
    return {
        "color": f"C{i % 10}",
        "marker": _MARKERS[i % len(_MARKERS)],
        "linestyle": _LINESTYLES[i % len(_LINESTYLES)],
    }


def _time_axis(ax: Any, axis: str, values: Any, what: str) -> float:
    """Label a time axis "`what` (unit)" in the unit `values` need, on a log scale when they
    span decades; return the divisor to plot seconds with."""
    unit, scale = time_unit(values)
    label = f"{what} ({unit})"
    if axis == "y":
        ax.set_ylabel(label)
        if spans_decades(values):
            ax.set_yscale("log")
    else:
        ax.set_xlabel(label)
    return scale


# ---- plots ------------------------------------------------------------------------------
def _loads(data: ReportData) -> list[Any]:
    return sorted(dict.fromkeys(data.done["load"]), key=lambda v: (isinstance(v, str), v))


def _categorical(data: ReportData) -> bool:
    """Whether loads go on the x axis as labels (text values, or a single value)."""
    loads = _loads(data)
    return len(loads) == 1 or any(isinstance(v, str) for v in loads)


def _load_label(data: ReportData) -> str:
    if data.load_axis == LOAD_AXIS:
        return "load (arrival-rate scale)"
    return data.load_axis


def _job_tables(data: ReportData) -> pd.DataFrame:
    frames = []
    for row in data.done.drop_duplicates(["key", "variant", "load"]).to_dict("records"):
        path = data.store.run_dir(row["key"]) / "jobs.parquet"
        jobs = _stored(
            path, partial(pd.read_parquet, path, columns=["jct", "queueing_delay", "status"])
        )
        jobs = jobs[jobs["status"] == "finished"]
        frames.append(
            pd.DataFrame(
                {
                    "variant": row["variant"],
                    "load": row["load"],
                    "replicate": row["replicate"],
                    "jct": jobs["jct"],
                    "queueing_delay": jobs["queueing_delay"],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _panels(n: int) -> tuple[int, int]:
    """(rows, columns) for n panels: one row up to three, then 2 x 2, then rows of three."""
    cols = 2 if n == 4 else max(1, min(n, 3))
    return max(1, math.ceil(n / cols)), cols


def _figure(n_panels: int, width: float = 4.6, height: float = 3.6) -> tuple[Figure, list[Any]]:
    from matplotlib.figure import Figure  # matplotlib: only when a plot is drawn

    rows, cols = _panels(n_panels)
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for extra in axes[n_panels:]:
        extra.set_visible(False)
    return fig, axes[:n_panels]


def _legend(fig: Figure, axes: Sequence[Any]) -> None:
    handles, labels = {}, []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    if labels:
        longest = max(len(label) for label in labels)
        fits = max(1, int(fig.get_figwidth() * 11 // (longest + 6)))  # ~11 characters/inch
        fig.legend(
            [handles[label] for label in labels],
            labels,
            loc="outside lower center",
            ncols=min(len(labels), 4, fits),
            frameon=False,
        )


def _plot_jct_cdf(data: ReportData, jobs: pd.DataFrame) -> Figure:
    loads = _loads(data)[:_MAX_PANELS]
    fig, axes = _figure(len(loads), width=6.4 if len(loads) == 1 else 4.6)
    unit, scale = time_unit(jobs["jct"])
    for ax, load in zip(axes, loads, strict=True):
        here = jobs[jobs["load"] == load]
        for variant in data.variants:
            jct = np.sort(here.loc[here["variant"] == variant, "jct"].to_numpy(dtype=float))
            if len(jct):
                fraction = np.arange(len(jct) + 1) / len(jct)
                style = _style(data, variant)
                ax.step(
                    np.concatenate([jct[:1], jct]) / scale,
                    fraction,
                    where="post",
                    color=style["color"],
                    linestyle=style["linestyle"],
                    label=short_label(variant),
                )
        _log_x(ax, here["jct"] / scale)
        ax.set_xlabel(f"job completion time ({unit})")
        ax.set_ylabel("fraction of jobs")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if len(loads) > 1:
            ax.set_title(f"{_load_label(data)} = {_short(load)}")
    fig.suptitle(f"{data.manifest['name']}: JCT CDF per policy (all replicates)")
    _legend(fig, axes)
    return fig


def _log_x(ax: Any, values: pd.Series) -> None:
    """A log x axis labelled in plain numbers: 1-2-5 steps over a short range, decades else."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    positive = values[values > 0]
    span = math.log10(positive.max() / positive.min()) if len(positive) else 0.0
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if span <= 2.5 else (1.0,)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _compact(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _compact(value: float) -> str:
    """1, 20, 500, 1k, 20k, 1M: short tick labels."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _by_load(
    data: ReportData, metric: str
) -> dict[str, tuple[list[Any], list[float], list[float]]]:
    """variant → (loads, mean, standard deviation) of `metric` over replicates."""
    done = data.done
    out = {}
    for variant in data.variants:
        mine = done[done["variant"] == variant]
        if mine.empty or metric not in mine.columns:
            continue
        grouped = mine.groupby("load", sort=True)[metric]
        mean, sd = grouped.mean(), grouped.std(ddof=1).fillna(0.0)
        out[variant] = (list(mean.index), mean.tolist(), sd.tolist())
    return out


def _line_vs_load(data: ReportData, ax: Any, metric: str, what: str) -> None:
    """`metric` (seconds) against load, one line per variant, labelled "`what` (unit)"."""
    categorical = _categorical(data)
    lines = _by_load(data, metric)
    scale = _time_axis(ax, "y", [v for _, mean, _ in lines.values() for v in mean], what)
    all_loads = _loads(data)
    for i, (variant, (loads, mean, sd)) in enumerate(lines.items()):
        x = np.array([all_loads.index(v) for v in loads] if categorical else loads, dtype=float)
        ax.errorbar(
            x + _dodge(data, i, len(lines), categorical),
            np.array(mean) / scale,
            yerr=np.array(sd) / scale,
            capsize=3,
            label=short_label(variant),
            **_style(data, variant),
        )
    if categorical:
        ax.set_xticks(range(len(_loads(data))), [_short(v) for v in _loads(data)])
    ax.set_xlabel(_load_label(data))
    ax.grid(alpha=0.3)


def _dodge(data: ReportData, i: int, n: int, categorical: bool) -> float:
    """A small sideways shift of line `i` of `n`, so that equal points do not hide each other."""
    if n < 2:
        return 0.0
    loads = [v for v in _loads(data) if not isinstance(v, str)]
    spread = 1.0 if categorical or len(loads) < 2 else float(max(loads) - min(loads))
    return (i - (n - 1) / 2) * 0.015 * spread


def _plot_vs_load(data: ReportData) -> Figure:
    fig, (ax,) = _figure(1, width=6.4, height=4.2)
    _line_vs_load(data, ax, "avg_jct", "average JCT")
    ax.set_title(
        f"{data.manifest['name']}: average JCT vs load (mean ± sd over replicates)", fontsize=10
    )
    _legend(fig, [ax])
    return fig


def _plot_queueing(data: ReportData, jobs: pd.DataFrame) -> Figure:
    fig, axes = _figure(2)
    _line_vs_load(data, axes[0], "avg_queueing_delay", "average queueing delay")
    axes[0].set_title("mean over jobs (± sd over replicates)", fontsize=10)
    loads = _loads(data)
    categorical = _categorical(data)
    p95s = {
        variant: mine.groupby("load", sort=True)["queueing_delay"].quantile(0.95)
        for variant in data.variants
        if not (mine := jobs[jobs["variant"] == variant]).empty
    }
    values = [v for p95 in p95s.values() for v in p95.to_numpy()]
    scale = _time_axis(axes[1], "y", values, "95th percentile queueing delay")
    for i, (variant, p95) in enumerate(p95s.items()):
        x = np.array([loads.index(v) for v in p95.index] if categorical else list(p95.index))
        axes[1].plot(
            x.astype(float) + _dodge(data, i, len(p95s), categorical),
            p95.to_numpy() / scale,
            label=short_label(variant),
            **_style(data, variant),
        )
    if categorical:
        axes[1].set_xticks(range(len(loads)), [_short(v) for v in loads])
    axes[1].set_xlabel(_load_label(data))
    axes[1].set_title("95th percentile over jobs (all replicates)", fontsize=10)
    axes[1].grid(alpha=0.3)
    fig.suptitle(f"{data.manifest['name']}: queueing delay (submit to first start)")
    _legend(fig, axes)
    return fig


def _plot_utilization(data: ReportData) -> Figure:
    """Busy fraction of each GPU type over time: one panel per policy variant, at the
    highest load and the first replicate."""
    done = data.done
    top = _loads(data)[-1]
    picks = []
    for variant in data.variants[:_MAX_PANELS]:
        mine = done[(done["variant"] == variant) & (done["load"] == top)]
        if not mine.empty:
            picks.append(mine.sort_values("replicate").iloc[0])
    fig, axes = _figure(len(picks))
    timelines = []
    for row in picks:
        timeline = pd.read_parquet(data.store.run_dir(row["key"]) / "timeline.parquet")
        cluster = Cluster.from_dict(data.store.run_config(row["key"])["cluster"])
        timelines.append((row, timeline, cluster))
    unit, scale = time_unit([float(t["time"].max()) for _, t, _ in timelines if len(t)])
    type_names = sorted({c.display_name(t) for _, _, c in timelines for t in c.gpu_types})
    for ax, (row, timeline, cluster) in zip(axes, timelines, strict=True):
        capacity = cluster.capacity_by_type()
        for gpu_type in sorted(capacity):
            name = cluster.display_name(gpu_type)
            if name not in timeline.columns:
                continue
            ax.step(
                timeline["time"] / scale,
                timeline[name] / capacity[gpu_type],
                where="post",
                color=f"C{type_names.index(name) % 10}",
                label=name,
            )
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("busy fraction of GPUs")
        sizes = ", ".join(f"{capacity[t]} {cluster.display_name(t)}" for t in sorted(capacity))
        ax.set_title(f"{short_label(row['variant'])} ({sizes})", fontsize=10)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"{data.manifest['name']}: GPU utilisation by type over time "
        f"({_load_label(data)} = {_short(top)}, first replicate)"
    )
    _legend(fig, axes)
    return fig


_RESOURCE_STYLE = {
    "gpu": ("GPUs busy", "C0", "-"),
    "cpu": ("CPU cores held", "C1", "--"),
    "memory": ("host memory held", "C2", ":"),
}


def _plot_resources(data: ReportData) -> Figure:
    """Share of GPUs, cores and host memory held over time: one panel per policy variant,
    at the highest load and the first replicate (as ``gpu_utilization.png``)."""
    done = data.done[data.done["key"].isin(list(data.resources))]
    loads = sorted(dict.fromkeys(done["load"]), key=lambda v: (isinstance(v, str), v))
    top = loads[-1]
    picks: list[pd.Series] = []
    for variant in data.variants:
        mine = done[(done["variant"] == variant) & (done["load"] == top)]
        if not mine.empty and len(picks) < _MAX_PANELS:
            picks.append(mine.sort_values("replicate").iloc[0])
    fig, axes = _figure(len(picks), width=6.4 if len(picks) == 1 else 4.6)
    unit, scale = time_unit(
        [
            float(data.resources[row["key"]][0]["time"].max())
            for row in picks
            if len(data.resources[row["key"]][0])
        ]
    )
    # One y range for every panel; below half the capacity, zoomed in so a lightly loaded
    # run's lines are not flat on the axis.
    peak = max(
        (
            float((timeline[r] / capacity[r]).max())
            for timeline, capacity in (data.resources[row["key"]] for row in picks)
            for r in _RESOURCE_STYLE
            if r in capacity and capacity[r] > 0 and len(timeline)
        ),
        default=1.0,
    )
    y_top = 1.05 if peak > 0.5 or peak <= 0 else 1.15 * peak
    for ax, row in zip(axes, picks, strict=True):
        timeline, capacity = data.resources[row["key"]]
        for resource, (label, color, style) in _RESOURCE_STYLE.items():
            if resource in capacity and capacity[resource] > 0:
                ax.step(
                    timeline["time"] / scale,
                    timeline[resource] / capacity[resource],
                    where="post",
                    color=color,
                    linestyle=style,
                    label=label,
                )
        ax.set_ylim(0, y_top)
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("share of the cluster's capacity")
        ax.set_title(short_label(str(row["variant"])), fontsize=10)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"{data.manifest['name']}: GPU, CPU and memory utilisation over time\n"
        f"({_load_label(data)} = {_short(top)}, first replicate)"
    )
    _legend(fig, axes)
    return fig


def _has_energy(data: ReportData) -> bool:
    """Whether any finished run has energy figures (`dlsched.energy`)."""
    return "energy_kwh" in data.done.columns and bool(data.done["energy_kwh"].notna().any())


def _plot_power(data: ReportData) -> Figure:
    """Cluster power over time (`dlsched.energy.power_series`, with the nodes' power states
    of a power-managed run): one panel per policy variant with energy figures, at the
    highest load and the first replicate."""
    from dlsched.energy import power_series

    done = data.done[data.done["energy_kwh"].notna()]
    loads = sorted(dict.fromkeys(done["load"]), key=lambda v: (isinstance(v, str), v))
    top = loads[-1]
    picks: list[pd.Series] = []
    for variant in data.variants:
        mine = done[(done["variant"] == variant) & (done["load"] == top)]
        if not mine.empty and len(picks) < _MAX_PANELS:
            picks.append(mine.sort_values("replicate").iloc[0])
    series = []
    for row in picks:
        key = row["key"]
        config = _stored(
            data.store.run_dir(key) / "config.json", partial(data.store.run_config, key)
        )
        result = _stored(data.store.run_dir(key), partial(data.store.load_run, key))
        states = (getattr(result, "meta", None) or {}).get("power_states")
        series.append(power_series(result.timeline, Cluster.from_dict(config["cluster"]), states))
    fig, axes = _figure(len(picks), width=6.4 if len(picks) == 1 else 4.6)
    unit, scale = time_unit([float(s["time"].max()) for s in series if len(s)] or [1.0])
    peak = max((float(s["power_w"].max()) for s in series if len(s)), default=1.0)
    kilo = peak >= 10_000  # kW on the axis once the numbers grow long
    for ax, row, power in zip(axes, picks, series, strict=True):
        ax.step(
            power["time"] / scale,
            power["power_w"] / (1000.0 if kilo else 1.0),
            where="post",
            label="cluster power",
        )
        ax.set_ylim(0, 1.05 * peak / (1000.0 if kilo else 1.0))
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("power (kW)" if kilo else "power (W)")
        ax.set_title(
            f"{short_label(str(row['variant']))}: {row['energy_kwh']:.3g} kWh", fontsize=10
        )
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"{data.manifest['name']}: cluster power over time\n"
        f"({_load_label(data)} = {_short(top)}, first replicate)"
    )
    return fig


def _plot_bars(data: ReportData) -> Figure:
    metrics = [  # (metric, what, seconds: a time axis in the unit its values need)
        ("avg_jct", "average JCT", True),
        ("makespan", "makespan", True),
        ("avg_queueing_delay", "average queueing delay", True),
        ("utilization", "GPU utilisation (%)", False),
    ]
    loads = _loads(data)
    fig, axes = _figure(4, width=5.2, height=3.6)
    width = 0.8 / max(1, len(loads))
    x = np.arange(len(data.variants))
    for ax, (metric, what, seconds) in zip(axes, metrics, strict=True):
        values = data.done[metric].dropna() if metric in data.done.columns else pd.Series([])
        if seconds:
            scale = _time_axis(ax, "y", values, what)
        else:
            scale = 0.01
            ax.set_ylabel(what)
        for j, load in enumerate(loads):
            means, sds = [], []
            for variant in data.variants:
                mine = data.done[(data.done["variant"] == variant) & (data.done["load"] == load)]
                values = mine[metric].dropna() if metric in mine.columns else pd.Series([])
                means.append(float(values.mean()) / scale if len(values) else 0.0)
                sds.append(float(values.std(ddof=1)) / scale if len(values) > 1 else 0.0)
            ax.bar(
                x + (j - (len(loads) - 1) / 2) * width,
                means,
                width,
                yerr=sds,
                capsize=2,
                color=f"C{j}",
                label=f"{_load_label(data)} = {_short(load)}",
            )
        ax.set_xticks(x, [short_label(v) for v in data.variants], rotation=20, ha="right")
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{data.manifest['name']}: per-policy summary (mean ± sd over replicates)")
    _legend(fig, axes)
    return fig


def _plot_deadlines(data: ReportData) -> Figure:
    fig, (ax,) = _figure(1, width=6.4, height=4.2)
    loads = _loads(data)
    width = 0.8 / max(1, len(loads))
    x = np.arange(len(data.variants))
    for j, load in enumerate(loads):
        values = []
        for variant in data.variants:
            mine = data.done[(data.done["variant"] == variant) & (data.done["load"] == load)]
            met = mine["deadline_satisfaction"].dropna()
            values.append(100 * float(met.mean()) if len(met) else 0.0)
        ax.bar(
            x + (j - (len(loads) - 1) / 2) * width,
            values,
            width,
            color=f"C{j}",
            label=f"{_load_label(data)} = {_short(load)}",
        )
    ax.set_xticks(x, [short_label(v) for v in data.variants], rotation=20, ha="right")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("jobs meeting their deadline (%)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{data.manifest['name']}: deadline satisfaction", fontsize=10)
    _legend(fig, [ax])
    return fig


# ---- rented cost against deadlines ------------------------------------------------------
def rented_job_costs(data: ReportData) -> pd.DataFrame:
    """Per finished job with a deadline of every run that attributes rented cost to jobs:
    variant, load, replicate, job_id, cost, slack_s (deadline − finish) and met. Empty when
    no run does."""
    rows = []
    for cell in data.done.drop_duplicates(["key", "variant", "load"]).to_dict("records"):
        folder = data.store.run_dir(cell["key"])
        path = folder / "meta.json"
        meta = _stored(path, partial(_read_json, path))
        rented = meta.get("rented") if isinstance(meta, dict) else None
        attributed = rented.get("jobs") if isinstance(rented, dict) else None
        if not attributed:
            continue
        path = folder / "jobs.parquet"
        jobs = _stored(path, partial(pd.read_parquet, path))
        if "deadline" not in jobs.columns:
            continue
        ends = {
            str(job_id): (deadline, finish)
            for job_id, deadline, finish in zip(
                jobs["job_id"], jobs["deadline"], jobs["finish_time"], strict=True
            )
        }
        for entry in attributed:
            deadline, finish = ends.get(str(entry.get("job_id")), (math.nan, math.nan))
            if _missing(deadline) or _missing(finish):
                continue
            rows.append(
                {
                    "variant": cell["variant"],
                    "load": cell["load"],
                    "replicate": cell["replicate"],
                    "job_id": entry["job_id"],
                    "cost": float(entry["cost"]),
                    "slack_s": float(deadline) - float(finish),
                    "met": float(finish) <= float(deadline),
                }
            )
    columns = ["variant", "load", "replicate", "job_id", "cost", "slack_s", "met"]
    return pd.DataFrame(rows, columns=columns)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _plot_cost_deadline(data: ReportData, costs: pd.DataFrame) -> Figure:
    fig, (ax,) = _figure(1, width=6.4, height=4.2)
    unit, scale = time_unit(costs["slack_s"].abs())
    for i, variant in enumerate(v for v in data.variants if v in set(costs["variant"])):
        mine = costs[costs["variant"] == variant]
        for met, face in ((True, f"C{i}"), (False, "none")):
            part = mine[mine["met"] == met]
            if part.empty:
                continue
            ax.scatter(
                part["slack_s"] / scale,
                part["cost"],
                s=22,
                marker="os^vD<>"[i % 7],
                facecolors=face,
                edgecolors=f"C{i}",
                label=f"{short_label(variant)} ({'met' if met else 'missed'})",
            )
    ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel(f"deadline slack, deadline − finish ({unit})")
    ax.set_ylabel("rented cost per job ($)")
    ax.grid(alpha=0.3)
    ax.set_title(f"{data.manifest['name']}: cost against deadline", fontsize=10)
    _legend(fig, [ax])
    return fig
