"""The `dlsched` command: `replay`, `compare`, `run` (experiments), `report` and `policies`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dlsched import policies
from dlsched.api import __version__, simulate
from dlsched.bundled import DEFAULT_CLUSTER, DEFAULT_TRACE, bundled_trace
from dlsched.cluster import load_cluster
from dlsched.errors import DlschedError
from dlsched.experiments import EXECUTORS, ResultsStore, load_experiment, run_experiment
from dlsched.overheads import PRESETS
from dlsched.perf import THROUGHPUT_MODELS
from dlsched.traces import LOADERS, load_trace


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param wants key=value, got {text!r}")
    return key.strip(), yaml.safe_load(value)  # "true" → True, "3" → 3, "easy" → "easy"


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """What every single replay needs: trace, cluster, models, seed, overheads."""
    parser.add_argument(
        "--trace", default=None, help=f"trace file (default: bundled traces/{DEFAULT_TRACE})"
    )
    parser.add_argument(
        "--format",
        default="auto",
        choices=["auto", *sorted(LOADERS)],
        help="trace format (default: detect)",
    )
    parser.add_argument(
        "--lenient", action="store_true", help="skip bad rows and unrunnable jobs, and report them"
    )
    parser.add_argument(
        "--cluster",
        default=DEFAULT_CLUSTER,
        help="cluster YAML file or bundled name (default: %(default)s)",
    )
    parser.add_argument(
        "--throughput",
        default="duration",
        choices=THROUGHPUT_MODELS,
        help="throughput model (default: %(default)s)",
    )
    parser.add_argument(
        "--estimator",
        default="oracle",
        help="oracle, noisy or noisy:<sigma> (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--restart-overhead",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="cost of resuming a preempted job (default: 0)",
    )
    parser.add_argument(
        "--overheads",
        default=None,
        choices=sorted(PRESETS),
        help="a named overhead preset (overrides --restart-overhead)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dlsched",
        description=(
            "What would happen to my jobs under scheduler X? Replays deep-learning job traces on "
            "a modelled GPU cluster under pluggable scheduling policies."
        ),
    )
    parser.add_argument("--version", action="version", version=f"dlsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    replay = sub.add_parser(
        "replay",
        help="replay a trace on a cluster under one policy",
        description="Replay a trace. With no arguments: the bundled "
        f"Philly day ({DEFAULT_TRACE}) on the Philly cluster under FIFO.",
    )
    _add_run_arguments(replay)
    replay.add_argument("--policy", default="fifo", help="policy name (see `dlsched policies`)")
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
        help="save jobs/events/timeline (parquet) and summary (JSON) here",
    )
    replay.add_argument("--json", action="store_true", help="print the summary as JSON")

    sub.add_parser("policies", help="list registered policies")

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
        help="comma-separated policies (default: %(default)s)",
    )
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
        default="process",
        choices=EXECUTORS,
        help="process: local process pool (default); local: one by one in "
        "this process; dask: a Dask cluster (--address, else a local one)",
    )
    run.add_argument(
        "--address",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler address, e.g. tcp://10.0.0.1:8786 (--executor dask)",
    )
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
        description="Write summary.csv, summary.md, runs.csv and PNG plots into a results "
        "directory written by `dlsched run`.",
    )
    report.add_argument("results", metavar="RESULTS_DIR")
    return parser


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
        params = dict(_param(pair) for pair in pairs)
        out.append((spec, name, params))
    return out


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
    trace = args.trace or str(bundled_trace(DEFAULT_TRACE))
    workload = load_trace(trace, format=args.format, lenient=args.lenient)
    cluster = load_cluster(args.cluster)
    result = simulate(
        workload,
        cluster,
        policy=args.policy,
        throughput=args.throughput,
        estimator=args.estimator,
        seed=args.seed,
        restart_overhead_s=args.restart_overhead,
        overheads=args.overheads,
        **dict(args.param),
    )
    summary = result.summary()
    if args.out:
        result.save(args.out)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    params = ", ".join(f"{k}={v!r}" for k, v in args.param)
    print(f"dlsched {__version__}: {len(workload):,} jobs from {trace}")
    types = ", ".join(
        f"{count} {cluster.display_name(t)}" for t, count in cluster.capacity_by_type().items()
    )
    print(f"cluster {cluster.name}: {cluster.num_gpus:,} GPUs ({types})")
    print(
        f"policy {args.policy}{f' ({params})' if params else ''}, throughput {args.throughput}, "
        f"estimator {args.estimator}, seed {args.seed}"
    )
    print()
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"  {key:<{width}}  {_fmt(key, value)}")
    for reason, count in (workload.provenance.get("excluded") or {}).items():
        print(f"  excluded at load: {count:,} rows: {reason}")
    for skipped in workload.provenance.get("skipped", [])[:5]:
        print(f"  skipped at load: row {skipped['row']}, {skipped['field']}: {skipped['reason']}")
    for job in result.meta.get("unschedulable", [])[:5]:
        print(f"  unschedulable: job {job['job_id']} (row {job['row']}): {job['reason']}")
    if args.out:
        print(f"\nsaved to {args.out}")
    return 0


def _policies() -> int:
    names = policies.names()
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {policies.describe(name)}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    trace = args.trace or str(bundled_trace(DEFAULT_TRACE))
    workload = load_trace(trace, format=args.format, lenient=args.lenient)
    cluster = load_cluster(args.cluster)
    summaries: dict[str, dict[str, Any]] = {}
    for label, name, params in args.policies:
        result = simulate(
            workload,
            cluster,
            policy=name,
            throughput=args.throughput,
            estimator=args.estimator,
            seed=args.seed,
            restart_overhead_s=args.restart_overhead,
            overheads=args.overheads,
            **params,
        )
        summaries[label] = result.summary()
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
    experiment = load_experiment(args.experiment)
    out = args.out or str(Path("results") / experiment.name)
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
            progress=args.progress,
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
    else:
        print(f"\ntables and plots: dlsched report {out}")
    return 0 if outcome.ok else 1


def _report(args: argparse.Namespace) -> int:
    from dlsched import report  # matplotlib: imported only when needed

    written = report.write_report(args.results)
    for path in written:
        print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dlsched` command."""
    args = _parser().parse_args(argv)
    commands = {"replay": _replay, "compare": _compare, "run": _run, "report": _report}
    try:
        if args.command in commands:
            return commands[args.command](args)
        return _policies()
    except (DlschedError, FileNotFoundError, ValueError) as exc:
        print(f"dlsched: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `dlsched replay --json | head`: the reader left, not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
