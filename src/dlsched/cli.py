"""The `dlsched` command: `replay`, `compare`, `run` (experiments), `report`, `policies` and
`reproduce` (published results)."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from dlsched import policies, registry, safeyaml
from dlsched._version import __version__
from dlsched.bundled import (
    DEFAULT_CLUSTER,
    DEFAULT_TRACE,
    bundled_root,
    bundled_trace,
    resolve_cluster,
)
from dlsched.cluster import load_cluster
from dlsched.errors import DlschedError, did_you_mean
from dlsched.experiments import EXECUTORS
from dlsched.overheads import PRESETS
from dlsched.perf import THROUGHPUT_MODELS, make_estimator
from dlsched.provision import PROVISIONERS
from dlsched.traces import LOADERS, load_trace

if TYPE_CHECKING:
    from dlsched.metrics import SimulationResult


class UsageError(DlschedError):
    """The command line itself is wrong: an unknown option, name or malformed value."""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one `dlsched: error: ...` line, like every user error."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _param(text: str) -> tuple[str, Any]:
    """``key=value`` → (key, value parsed as YAML: "true" → True, "3" → 3, "1e8" → 1e8,
    "inf" → inf, "easy" → "easy"), by the bounded loader of every config (`dlsched.safeyaml`)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"a parameter is key=value, got {text!r}")
    if not value.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} gives {key!r} no value; write {key}=VALUE ({key}=null for none)"
        )
    try:
        return key, safeyaml.loads(value)  # 1e8, 1.5e3 and inf are numbers (YAML 1.2)
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(
            f"{key}={value}: the value is not valid YAML ({safeyaml.problem(exc)}); "
            "quote a string, close brackets: key=[1, 2], key={a: 1}"
        ) from None


def _one_of(what: str, choices: Iterable[str]) -> Callable[[str], str]:
    """An argparse type that accepts one of `choices` and answers a typo with a did-you-mean."""
    known = list(choices)

    def check(text: str) -> str:
        if text in known:
            return text
        raise argparse.ArgumentTypeError(
            f"unknown {what} {text!r}{did_you_mean(text, known)}; choose from {', '.join(known)}"
        )

    return check


def _cluster(text: str) -> str:
    """A cluster file that exists or a bundled cluster name (as given: `load_cluster` reads it)."""
    try:
        resolve_cluster(text)
    except FileNotFoundError:
        bundled = sorted(p.stem for p in (bundled_root() / "configs" / "clusters").glob("*.yaml"))
        hint = did_you_mean(Path(text).name.removesuffix(".yaml"), bundled)
        raise argparse.ArgumentTypeError(
            f"{text}: no such cluster file and no bundled cluster of that name{hint}; "
            f"bundled: {', '.join(bundled)}"
        ) from None
    return text


def _estimator(text: str) -> str:
    """An estimator spec that `make_estimator` accepts (checked now, not after loading a trace):
    a registered name (`dlsched.perf.ESTIMATORS`, plugins included) with its argument."""
    try:
        make_estimator(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _batch_mix(text: str) -> dict[str, float]:
    """``--batch-schedules``: `dlsched.experiments.dynamic.parse_mix`."""
    from dlsched.experiments.dynamic import parse_mix

    try:
        return parse_mix(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dynamic_inputs(args: argparse.Namespace, workload: Any) -> tuple[Any, Any]:
    """The workload with ``--batch-schedules`` applied, and the run's throughput: the
    dynamic truth over ``--throughput`` when the workload has a ``batch_schedule`` column
    (`dlsched.experiments.dynamic`)."""
    from dlsched.experiments import dynamic

    if args.batch_schedules is not None:
        workload = dynamic.add_schedules(workload, args.batch_schedules, args.batch_seed or 0)
    elif args.batch_seed is not None:
        raise UsageError("--batch-seed seeds --batch-schedules; give --batch-schedules too")
    if not dynamic.has_schedules(workload):
        if args.unmeasured_batch is not None:
            raise UsageError(
                "--unmeasured-batch applies to batch-size schedules, but the workload has no "
                "batch_schedule column; give --batch-schedules or a trace with the column"
            )
        dynamic.check_estimator(workload, args.estimator)
        return workload, args.throughput
    try:
        truth = dynamic.dynamic_truth(workload, args.throughput, args.unmeasured_batch or "error")
    except ValueError as exc:
        raise UsageError(f"--throughput {args.throughput}: {exc}") from None
    return workload, truth


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """What every single replay needs: trace, cluster, models, seed, overheads."""
    parser.add_argument(
        "--trace", default=None, help=f"trace file (default: bundled traces/{DEFAULT_TRACE})"
    )
    parser.add_argument(
        "--format",
        default="auto",
        type=_one_of("trace format", ["auto", *sorted(LOADERS)]),
        help=f"trace format: auto (detect; the default), {', '.join(sorted(LOADERS))}",
    )
    parser.add_argument(
        "--lenient", action="store_true", help="skip bad rows and unrunnable jobs, and report them"
    )
    parser.add_argument(
        "--cluster",
        default=DEFAULT_CLUSTER,
        type=_cluster,
        help="cluster YAML file or bundled name (default: %(default)s)",
    )
    parser.add_argument(
        "--throughput",
        default="duration",
        type=_one_of("throughput model", THROUGHPUT_MODELS),
        help=f"throughput model: {', '.join(THROUGHPUT_MODELS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--estimator",
        default="oracle",
        type=_estimator,
        help="oracle, noisy, noisy:<sigma>, learned, learned:<prior>, or dynamic[:advance] / "
        "dynamic:online for batch-size schedules (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-schedules",
        default=None,
        type=_batch_mix,
        metavar="MIX",
        help="give each Gavel-type job a seeded batch-size schedule (Shockwave's): "
        "'shockwave' (a third each) or static=W,gns=W,accordion=W. A workload with a "
        "batch_schedule column runs on the dynamic truth over --throughput",
    )
    parser.add_argument(
        "--batch-seed",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="the seed of --batch-schedules (default: 0)",
    )
    parser.add_argument(
        "--unmeasured-batch",
        default=None,
        type=_one_of("unmeasured batch", ["error", "samples"]),
        help="a scheduled batch size the throughput model has not measured: error (the "
        "default) or samples (the initial batch's samples/s)",
    )
    parser.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="the run's seed, a whole number >= 0 (default: 0)",
    )
    parser.add_argument(
        "--restart-overhead",
        type=_finite_float(minimum=0.0),
        default=0.0,
        metavar="SECONDS",
        help="cost of resuming a preempted job (default: 0)",
    )
    parser.add_argument(
        "--overheads",
        default=None,
        type=_one_of("overhead preset", sorted(PRESETS)),
        help=f"a named overhead preset: {', '.join(sorted(PRESETS))} (overrides "
        "--restart-overhead)",
    )
    parser.add_argument(
        "--provisioner",
        default=None,
        type=_one_of("provisioner", PROVISIONERS),
        help=f"{', '.join(PROVISIONERS)}: on a cluster that rents instances (default: on_demand "
        "there, none on a fixed cluster); ces powers a fixed cluster's idle nodes down (its "
        "file needs an 'energy' section)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar of jobs finished, per run (default: only on a terminal)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dlsched",
        description=(
            "What would happen to my jobs under scheduler X? Replays deep-learning job traces on "
            "a modelled GPU cluster under pluggable scheduling policies."
        ),
    )
    parser.add_argument("-V", "--version", action="version", version=f"dlsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    replay = sub.add_parser(
        "replay",
        help="replay a trace on a cluster under one policy",
        description="Replay a trace. With no arguments: the bundled "
        f"Philly day ({DEFAULT_TRACE}) on the Philly cluster under FIFO.",
    )
    _add_run_arguments(replay)
    replay.add_argument(
        "--policy",
        default="fifo",
        help="policy name (see `dlsched policies`), or with --allow-import an import path "
        "package.module:Class",
    )
    _add_allow_import(replay)
    replay.add_argument(
        "--param",
        action="append",
        type=_param,
        default=[],
        metavar="KEY=VALUE",
        help="policy parameter, repeatable (e.g. --param backfill=easy)",
    )
    replay.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="save jobs/events/timeline (parquet) and summary (JSON) here, all or nothing "
        "(meta.json last); a folder, or an fsspec URL (s3://bucket/x needs s3fs)",
    )
    replay.add_argument(
        "--events",
        default=None,
        metavar="FILE",
        help="stream the event log to this parquet file as the run goes (row groups), so a "
        "long replay never holds it in memory",
    )
    replay.add_argument("--json", action="store_true", help="print the summary as JSON")

    listing = sub.add_parser(
        "policies",
        help="list registered policies with their parameters",
        description="List every registered policy, its one-line description and its "
        "parameters with their defaults; with a NAME, that policy in detail.",
    )
    listing.add_argument("name", nargs="?", metavar="NAME", help="one policy to show in detail")

    compare = sub.add_parser(
        "compare",
        help="replay one trace under several policies, side by side",
        description="Replay one trace on one cluster under each policy and print the "
        "summaries side by side. A policy may carry parameters: fifo:backfill=easy "
        "(several: name:key=value:key=value).",
    )
    _add_run_arguments(compare)
    compare.add_argument(
        "--policies",
        default="fifo,sjf,srtf",
        type=_policy_list,
        help="comma-separated policies (default: %(default)s); with --allow-import, also "
        "import paths package.module:Class[:key=value...]",
    )
    _add_allow_import(compare)
    compare.add_argument("--json", action="store_true", help="print {policy: summary} as JSON")

    run = sub.add_parser(
        "run",
        help="run an experiment file: a grid of policies x sweeps x seeds",
        description="Run every run of an experiment's grid that is not stored yet (see "
        "configs/experiments/). Finished runs are kept, so an interrupted run resumes.",
    )
    run.add_argument("experiment", help="experiment YAML file")
    run.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="results directory of this experiment (default: results/<name>)",
    )
    run.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="runs in parallel (default: the number of CPUs)",
    )
    run.add_argument(
        "--executor",
        default=None,
        type=_one_of("executor", EXECUTORS),
        help="process: local process pool (the default); local: one by one in "
        "this process; dask: a Dask cluster (--address or --scheduler-file, else a local "
        "one; the default when either is given)",
    )
    dask_target = run.add_mutually_exclusive_group()
    dask_target.add_argument(
        "--address",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler address, e.g. tcp://10.0.0.1:8786 (implies --executor dask)",
    )
    dask_target.add_argument(
        "--scheduler-file",
        default=None,
        metavar="PATH",
        help="connect to the running Dask scheduler that wrote PATH (`dask scheduler "
        "--scheduler-file PATH`, dask-jobqueue, dask-mpi); implies --executor dask",
    )
    run.add_argument(
        "--retries",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="times runs are tried again after their worker died (a broken local pool "
        "replaced, a Dask run whose worker was killed resubmitted); default: 3",
    )
    _add_allow_import(run, "the experiment's policies, throughput model and estimator")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="list the grid and what is already stored; run nothing",
    )
    run.add_argument(
        "--report",
        action="store_true",
        help="write the report (dlsched report) when the runs are done",
    )
    run.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (default: only on a terminal)",
    )

    report = sub.add_parser(
        "report",
        help="tables and plots of an experiment's results",
        description="Write summary.csv, summary.md, runs.csv and plots (PNG, or PDF/SVG "
        "with --format) into a results "
        "directory written by `dlsched run`. Where a run's cluster declares CPU cores or host "
        "memory, also every resource's utilisation (table and resource_utilization.png).",
    )
    report.add_argument("results", metavar="RESULTS_DIR")
    report.add_argument(
        "--format",
        dest="formats",
        type=_plot_formats,
        default=("png",),
        metavar="FMT[,FMT]",
        help="plot formats, comma-separated: png, pdf, svg (vector, for papers); default png",
    )
    report.add_argument(
        "--dpi",
        type=_dpi,
        default=None,
        help="resolution of PNG plots in dots per inch (default 110; 300 for print)",
    )

    reproduce = sub.add_parser(
        "reproduce",
        help="reproduce a published table or figure and compare with it",
        description="Run a registered reproduction of published results, print ours vs "
        "published per point, write fidelity.csv, fidelity.md and one overlay plot per figure "
        "(default folder results/reproduce/NAME), and exit 1 if a point is outside its "
        "tolerance. Finished runs are kept, so an interrupted run resumes.",
    )
    reproduce.add_argument("name", nargs="?", metavar="NAME", help="the reproduction to run")
    reproduce.add_argument(
        "--list", action="store_true", help="list the reproductions: source, data and cost"
    )
    reproduce.add_argument(
        "--quick", action="store_true", help="run the documented subset (minutes)"
    )
    reproduce.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="results folder (default: results/reproduce/NAME; with --table, the folder "
        "holding NAME/fidelity.csv, default results/reproduce)",
    )
    reproduce.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="runs in parallel (default: the number of CPUs)",
    )
    reproduce.add_argument(
        "--shared",
        default=None,
        metavar="DIR",
        help="the shared data folder (default: $DLSCHED_SHARED, else ../shared beside a source "
        "checkout or beside the working directory)",
    )
    reproduce.add_argument(
        "--table",
        action="store_true",
        help="print the fidelity table (markdown) of the reproductions run so far",
    )
    reproduce.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="PATTERN",
        help="run only the tasks whose id matches this glob, repeatable "
        "(e.g. --only '*-4.8jph-*'; ids are in the progress lines and fidelity.csv)",
    )
    reproduce.add_argument("--no-plots", action="store_true", help="write no plots")
    return parser


ALLOW_IMPORT_FLAG = "--allow-import (this runs code from that module)"
"""The opt-in to import paths on the command line, as refusals name it."""


def _add_allow_import(parser: argparse.ArgumentParser, what: str = "policies") -> None:
    parser.add_argument(
        "--allow-import",
        action="store_true",
        help=f"let {what} be import paths (package.module:Class): this runs code from "
        "those modules. Without it, only registered names are accepted",
    )


def _finite_float(minimum: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number (>= `minimum` when given). NaN is never a value a
    flag means, and no flag of dlsched's means infinity; argparse names the flag."""

    def parse(text: str) -> float:
        bound = "" if minimum is None else f" >= {minimum:g}"
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a finite number{bound}, got {text!r}"
            ) from None
        if not math.isfinite(value) or (minimum is not None and value < minimum):
            raise argparse.ArgumentTypeError(f"expected a finite number{bound}, got {text!r}")
        return value

    return parse


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"wants a whole number >= 1, got {text!r}")
    return value


def _policy_list(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``fifo,fifo:backfill=easy`` → [(label, name, params), ...]."""
    out = []
    for spec in (part.strip() for part in text.split(",")):
        if not spec:
            raise argparse.ArgumentTypeError(f"empty policy name in {text!r}")
        name, *pairs = spec.split(":")
        if pairs and "=" not in pairs[0]:  # an import path: package.module:Class[:k=v...]
            name = f"{name}:{pairs.pop(0)}"
        params = dict(_param(pair) for pair in pairs)
        out.append((spec, name, params))
    return out


def _build_policy(name: str, params: dict[str, Any], allow_import: bool = False) -> Any:
    """A policy instance built from the command line's name and parameters.

    Built here rather than by `simulate(policy=name, **params)` so that a parameter named
    like a run setting (`seed`) cannot collide with `simulate`'s own keywords, and so that a
    value the constructor refuses is reported as the user's mistake. A constructor only stores
    and checks its parameters (the policy contract), so a TypeError it raises comes from a
    value of the wrong type given on the command line, not from a bug of a run.

    An import path (``package.module:Class``) is imported only with `allow_import`
    (``--allow-import``), and only a class with a ``schedule`` method is constructed.
    """
    try:
        if registry.is_import_path(name):
            factory = policies.registry.import_policy(
                name, allowed=allow_import, opt_in=ALLOW_IMPORT_FLAG
            )
            policies.check_params(name, factory, params)
            return factory(**params)
        return policies.get(name, **params)  # an unknown name: one error with a did-you-mean
    except TypeError as exc:
        given = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise UsageError(
            f"policy {name!r} cannot take {given}: {exc}; `dlsched policies {name}` lists its "
            "parameters"
        ) from None


def _simulate(
    args: argparse.Namespace,
    workload: Any,
    cluster: Any,
    policy: Any,
    params: dict[str, Any],
    throughput: Any = None,
) -> SimulationResult:
    """One replay under the command line's run settings; `params` built `policy`;
    `throughput`, when given, the run's truth (the dynamic one, `_dynamic_inputs`)."""
    from dlsched.api import simulate  # pandas and the engine: imported only when a run starts

    result = simulate(
        workload,
        cluster,
        policy=policy,
        throughput=args.throughput if throughput is None else throughput,
        estimator=args.estimator,
        seed=args.seed,
        restart_overhead_s=args.restart_overhead,
        overheads=args.overheads,
        progress=args.progress,
        events=getattr(args, "events", None),
        provisioner=getattr(args, "provisioner", None),
    )
    # simulate() records the parameters only when it builds the policy itself.
    result.meta["policy_params"] = {k: repr(v) for k, v in sorted(params.items())}
    return result


def _check_out_dir(option: str, folder: str) -> None:
    """Refuse an output folder that cannot be written, before a long run rather than after.

    Nothing is created: the nearest existing ancestor must be a folder we can write into.
    """
    path = Path(folder)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "it is" if existing == path else f"{existing} is"
        raise UsageError(f"{option} {folder}: {what} a file, not a folder; give a folder path")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UsageError(
            f"{option} {folder}: cannot write into {existing} ({exc.strerror or exc}); "
            "give a folder you can write to"
        ) from None


def _check_replay_out(out: str) -> tuple[Any, str] | None:
    """Check `replay --out` before the run: a local folder that can be written, or a URL
    whose file system package is installed (then that file system and the path in it)."""
    from dlsched.experiments.store import is_remote, url_filesystem

    if is_remote(out):
        return url_filesystem(out)  # (`pip install s3fs` where it is missing)
    _check_out_dir("--out", out)
    return None


def _check_replay_targets(args: argparse.Namespace, inputs: list[Any]) -> None:
    """Refuse, before the run, what `replay` would write over: a symbolic link among the
    files of --out or at --events, an input of the run (the trace, the cluster file), and
    an --events file that is one of --out's own files (saving would replace one by the
    other)."""
    from dlsched.atomic import check_target, input_files, same_file
    from dlsched.experiments.store import is_remote
    from dlsched.metrics import RESULT_FILES

    inputs = input_files(*inputs)
    if args.out and not is_remote(args.out):
        for name in RESULT_FILES:
            check_target(Path(args.out) / name, inputs, "--out")
    if args.events:
        check_target(args.events, inputs, "--events")
        if args.out and not is_remote(args.out):
            for name in RESULT_FILES:
                if same_file(args.events, Path(args.out) / name):
                    raise UsageError(
                        f"--events {args.events} is {name} of --out {args.out}, which saving "
                        "the result writes; give --events a file outside that folder (--out "
                        "saves the event log as its events.parquet anyway)"
                    )


def _save_to_url(result: SimulationResult, fs: Any, path: str) -> None:
    """`replay --out URL`: the result saved locally, then each file put, ``meta.json`` last
    (one object put is atomic: a folder without it is an unfinished save)."""
    from dlsched.metrics import RESULT_FILES

    with tempfile.TemporaryDirectory(prefix=".tmp-save-") as scratch:
        result.save(scratch)
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(f"{path}/meta.json")  # un-commit an older result first
        for name in RESULT_FILES:  # (meta.json is the last of them)
            fs.put_file(str(Path(scratch) / name), f"{path}/{name}")


def _fmt(key: str, value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if key.endswith("wall_s"):
            return f"{value:.3f} s"
        if key == "utilization" or key == "deadline_satisfaction":
            return f"{100 * value:.1f} %"
        if (
            key.endswith("_s")
            or key
            in ("avg_jct", "makespan", "avg_queueing_delay", "total_tardiness", "avg_tardiness")
            or "jct" in key
        ):
            text = f"{value:,.1f} s"
            return text + (f"  ({value / 3600:,.2f} h)" if abs(value) >= 3600 else "")
        return f"{value:,.3f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _replay(args: argparse.Namespace) -> int:
    params = dict(args.param)
    # a mistake here fails before the trace loads
    policy = _build_policy(args.policy, params, args.allow_import)
    remote = None
    if args.out:
        remote = _check_replay_out(args.out)
    trace = args.trace or str(bundled_trace(DEFAULT_TRACE))
    workload = load_trace(trace, format=args.format, lenient=args.lenient)
    workload, truth = _dynamic_inputs(args, workload)
    cluster = load_cluster(args.cluster)
    _check_replay_targets(args, [trace, workload.provenance.get("source"), cluster.source])
    result = _simulate(args, workload, cluster, policy, params, truth)
    summary = result.summary()
    if args.out:
        if remote is None:
            result.save(args.out)
        else:
            _save_to_url(result, *remote)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    print(f"dlsched {__version__}: {len(workload):,} jobs from {trace}")
    types = ", ".join(
        f"{count} {cluster.display_name(t)}" for t, count in cluster.capacity_by_type().items()
    )
    print(f"cluster {cluster.name}: {cluster.num_gpus:,} GPUs ({types})")
    truth_name = getattr(truth, "name", truth)  # dynamic-<base> on a batch_schedule column
    print(
        f"policy {args.policy}{f' ({shown})' if shown else ''}, throughput {truth_name}, "
        f"estimator {args.estimator}, seed {args.seed}"
    )
    print()
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"  {key:<{width}}  {_fmt(key, value)}")
    for reason, count in (workload.provenance.get("excluded") or {}).items():
        print(f"  excluded at load: {count:,} rows: {reason}")
    for skipped in workload.provenance.get("skipped", [])[:5]:
        field = f", field {skipped['field']!r}" if skipped.get("field") is not None else ""
        print(f"  skipped at load: row {skipped['row']}{field}: {skipped['reason']}")
    for job in result.meta.get("unschedulable", [])[:5]:
        print(f"  unschedulable: job {job['job_id']} (row {job['row']}): {job['reason']}")
    if args.events:
        print(f"\nevent log streamed to {args.events}")
    if args.out:
        print(f"\nsaved to {args.out}")
    return 0


def _policy_parameters(name: str) -> list[inspect.Parameter]:
    """The parameters of policy `name`, in order; a ``**kwargs`` last (per-vc passes its
    own on to its inner policy)."""
    named = list(policies.parameters(name).values())
    signature = inspect.signature(policies.factory(name))
    return named + [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]


def _starred(param: inspect.Parameter) -> str:
    """A parameter's name as a signature writes it: ``name``, ``*name`` or ``**name``."""
    if param.kind is param.VAR_POSITIONAL:
        return f"*{param.name}"
    if param.kind is param.VAR_KEYWORD:
        return f"**{param.name}"
    return param.name


def _parameter_default(param: inspect.Parameter) -> str:
    """``name=default``, ``name (required)`` or ``**name`` for a policy's listing."""
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        return _starred(param)
    if param.default is param.empty:
        return f"{param.name} (required)"
    return f"{param.name}={param.default!r}"


def _parameter_detail(param: inspect.Parameter) -> str:
    """``name: type = default`` for one policy in detail."""
    text = _starred(param)
    if param.annotation is not param.empty:
        kind = param.annotation
        text += f": {kind if isinstance(kind, str) else getattr(kind, '__name__', kind)}"
    if param.default is not param.empty:
        text += f" = {param.default!r}"
    return text


_WIDTH = 100


def _policies(name: str | None) -> int:
    """List every policy with its parameters, then the placements; or show policy `name`."""
    if name is not None:
        return _policy_detail(name)
    names = policies.names(aliases=False)
    column = min(max(len(n) for n in names), 26)
    print("policies (each once; `dlsched policies NAME` shows one in detail):")
    for policy in names:
        also = policies.aliases(policy)
        alias_note = f"  [alias: {', '.join(also)}]" if also else ""
        print(f"{policy:<{column}}  {policies.describe(policy)}{alias_note}")
        listed = ", ".join(_parameter_default(p) for p in _policy_parameters(policy))
        print(
            textwrap.fill(
                listed or "(no parameters)",
                _WIDTH,
                initial_indent="    ",
                subsequent_indent="    ",
                break_on_hyphens=False,
            )
        )
    print("placements (not policies: give one to a policy, --param placement=NAME):")
    for placement, about in _placements():
        print(f"{placement:<{column}}  {about}")
    return 0


def _placements() -> list[tuple[str, str]]:
    """(name, one line) of every registered placement; a ``<name>:shuffled`` variant is
    said on its base's line rather than listed apart."""
    from dlsched.engine.placement import STRATEGIES  # only when placements are listed

    names = STRATEGIES.names()
    listed = []
    for name in names:
        base, _, variant = name.partition(":")
        if variant and base in names:
            continue
        about = _first_sentence(inspect.getdoc(STRATEGIES.get(name)) or "", name)
        if f"{name}:shuffled" in names:
            about += f" Also {name}:shuffled (ties to a random node order)."
        listed.append((name, about))
    return listed


def _first_sentence(doc: str, name: str) -> str:
    """The first sentence of a docstring's first paragraph, without reST markup or a
    leading ``name``: of its own."""
    text = " ".join(doc.split("\n\n")[0].split()).replace("``", "")
    text = text.removeprefix(f"{name}: ")
    sentence, dot, _ = text.partition(". ")
    sentence = sentence.split("; see the module docstring")[0].rstrip(".") or name
    if len(sentence) > 60:  # one line each: the detail is in the docstring
        sentence = sentence[:60].rsplit(" ", 1)[0].rstrip(",;:(") + " ..."
    return sentence[0].upper() + sentence[1:] + ("" if sentence.endswith("...") else ".")


def _policy_detail(name: str) -> int:
    factory = policies.factory(name)  # an unknown name: one error with a did-you-mean
    own = policies.POLICIES.canonical(name)
    print(f"{own}: {policies.describe(own)}")
    also = policies.aliases(own)
    if name != own:
        print(f"({name} is an alias of {own})")
    elif also:
        print(f"(also named {', '.join(also)})")
    module = sys.modules.get(getattr(factory, "__module__", ""))
    about = (inspect.getdoc(module) or "").split("\n\n")[0] if module is not None else ""
    if module is not None and about:  # the module docstring names the paper
        print()
        print(textwrap.fill(" ".join(about.split()), _WIDTH))
        print(f"(module {module.__name__})")
    params = _policy_parameters(own)
    print()
    print("parameters:" if params else "parameters: none")
    for param in params:
        print(f"  {_parameter_detail(param)}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    # Every name and parameter is checked before the trace loads; each instance runs once.
    built = [
        (label, _build_policy(name, params, args.allow_import), params)
        for label, name, params in args.policies
    ]
    trace = args.trace or str(bundled_trace(DEFAULT_TRACE))
    workload = load_trace(trace, format=args.format, lenient=args.lenient)
    workload, truth = _dynamic_inputs(args, workload)
    cluster = load_cluster(args.cluster)
    summaries: dict[str, dict[str, Any]] = {}
    for label, policy, params in built:
        summaries[label] = _simulate(args, workload, cluster, policy, params, truth).summary()
    if args.json:
        print(json.dumps(summaries, indent=2))
        return 0
    print(f"dlsched {__version__}: {len(workload):,} jobs from {trace}")
    print(
        f"cluster {cluster.name}: {cluster.num_gpus:,} GPUs; throughput {args.throughput}, "
        f"estimator {args.estimator}, seed {args.seed}"
    )
    print()
    keys = list(dict.fromkeys(k for s in summaries.values() for k in s))
    table = [["", *summaries]]
    for key in keys:
        table.append(
            [
                key,
                *(
                    _fmt(key, s[key]).split("  (")[0] if key in s else "-"
                    for s in summaries.values()
                ),
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print(
            "  "
            + "  ".join(
                [
                    row[0].ljust(widths[0]),
                    *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)),
                ]
            )
        )
    return 0


def _run(args: argparse.Namespace) -> int:
    from dlsched.experiments import ResultsStore, load_experiment, run_experiment
    from dlsched.experiments.store import is_remote

    experiment = load_experiment(args.experiment, allow_imports=args.allow_import)
    out = args.out or str(Path("results") / experiment.name)
    if is_remote(out) and args.report:
        raise UsageError(
            f"--report writes files beside the results, and --out {out} is a URL; run "
            "`dlsched report` on a local copy, or query its dataset/ folder"
        )
    if not args.dry_run and not is_remote(out):
        _check_out_dir("--out" if args.out else "results folder", out)
    if args.dry_run:
        store = ResultsStore(out)
        done = sum(store.is_finished(k) for k in experiment.runs)
        print(
            f"{experiment.name}: {len(experiment.points)} grid cells, "
            f"{len(experiment.runs)} distinct runs, {done} already stored in {out}"
        )
        for point in experiment.points:
            mark = "done" if store.is_finished(point.key) else "todo"
            axes = " ".join(f"{a}={v}" for a, v in point.axes)
            print(f"  {mark}  {point.key}  {point.policy:<16} seed#{point.replicate} {axes}")
        return 0
    try:
        outcome = run_experiment(
            experiment,
            out,
            workers=args.workers,
            executor=args.executor,
            address=args.address,
            scheduler_file=args.scheduler_file,
            progress=args.progress,
            **({} if args.retries is None else {"retries": args.retries}),
        )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the finished runs are stored in {out}; run the same command "
            "again to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"{experiment.name}: {len(experiment.runs)} runs: {len(outcome.finished)} ran now, "
        f"{len(outcome.skipped)} already stored, {len(outcome.failed)} failed "
        f"({outcome.wall_s:.1f} s) -> {out}"
    )
    if outcome.pool_restarts:
        print(
            f"  a worker process died {outcome.pool_restarts} time(s) (killed, or out of "
            "memory?); its runs were run again"
        )
    for key, error in outcome.failed.items():
        print(f"  failed {key}: {error} (traceback in {out}/failures/{key}.json)")
    from dlsched import report  # matplotlib: imported only when needed

    data = report.collect(out)
    table = report.summary_table(data)
    if not table.empty:
        shown = table[
            [
                c
                for c in (
                    "policy",
                    *data.axes,
                    "runs",
                    "avg_jct",
                    "makespan",
                    "avg_queueing_delay",
                    "utilization",
                )
                if c in table.columns
            ]
        ]
        formats = {
            c: (lambda v: f"{100 * v:.1f} %") if c == "utilization" else (lambda v: f"{v:,.1f}")
            for c in ("avg_jct", "makespan", "avg_queueing_delay", "utilization")
        }
        print()
        print(
            shown.to_string(
                index=False, formatters={c: f for c, f in formats.items() if c in shown.columns}
            )
        )
    if args.report:
        written = report.write_report(out)
        print(f"\nreport: {len(written)} files in {out} (summary.md)")
    elif is_remote(out):
        print(f"\nevery run at once (pyarrow.dataset, DuckDB): {out}/dataset/jobs, runs, events")
    else:
        print(f"\ntables and plots: dlsched report {out}")
    return 0 if outcome.ok else 1


def _report(args: argparse.Namespace) -> int:
    from dlsched import report  # matplotlib: imported only when needed

    dpi = report.DEFAULT_DPI if args.dpi is None else args.dpi
    written = report.write_report(args.results, formats=args.formats, dpi=dpi)
    for path in written:
        print(path)
    return 0


def _plot_formats(text: str) -> tuple[str, ...]:
    """``--format png,pdf``: the plot formats, checked (an argparse type)."""
    from dlsched.report import check_formats

    try:
        return check_formats(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _dpi(text: str) -> float:
    """``--dpi 300``: a resolution from 20 to 1200 dots per inch (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 20 <= value <= 1200:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is not from 20 to 1200 dots per inch")
    return value


def _one_line(text: str) -> str:
    """`text` on one line: an error is always one line of the terminal."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _user_error(exc: BaseException) -> str:
    """The message of a user error, on one line."""
    if isinstance(exc, yaml.YAMLError):
        return safeyaml.problem(exc)
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return _one_line(str(exc)) or type(exc).__name__


def _reproduce(args: argparse.Namespace) -> int:
    from dlsched.reproduce import command  # the catalogue and matplotlib: only when asked

    return command.run(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dlsched` command."""
    commands = {
        "replay": _replay,
        "compare": _compare,
        "run": _run,
        "report": _report,
        "reproduce": _reproduce,
    }
    # The boundary between a user's mistake and a bug. User errors are one line on stderr and
    # exit 2: DlschedError (what dlsched raises on purpose, usage errors included), ValueError
    # (validation of a file, name or value the user gave; ConfigError and TraceError are
    # ValueErrors too), OSError (a path the user named cannot be read or written) and
    # yaml.YAMLError (a YAML file the user wrote). Ctrl-C is exit 130 without a traceback.
    # Anything else (TypeError, KeyError, AttributeError ...) is a bug in dlsched and keeps
    # its traceback, so that it gets reported.
    try:
        args = _parser().parse_args(argv)
        if args.command in commands:
            return commands[args.command](args)
        return _policies(args.name)
    except BrokenPipeError:  # `dlsched replay --json | head`: the reader left, not an error
        sys.stderr.close()
        return 0
    except (DlschedError, ValueError, OSError, yaml.YAMLError) as exc:
        print(f"dlsched: error: {_user_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dlsched: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
