"""The `dlsched` command: `dlsched replay ...` and `dlsched policies`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from dlsched import policies
from dlsched.api import __version__, simulate
from dlsched.bundled import DEFAULT_CLUSTER, DEFAULT_TRACE, bundled_trace
from dlsched.cluster import load_cluster
from dlsched.errors import DlschedError
from dlsched.perf import THROUGHPUT_MODELS
from dlsched.traces import LOADERS, load_trace


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param wants key=value, got {text!r}")
    return key.strip(), yaml.safe_load(value)  # "true" → True, "3" → 3, "easy" → "easy"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dlsched", description=(
        "What would happen to my jobs under scheduler X? Replays deep-learning job traces on "
        "a modelled GPU cluster under pluggable scheduling policies."))
    parser.add_argument("--version", action="version", version=f"dlsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    replay = sub.add_parser("replay", help="replay a trace on a cluster under one policy",
                            description="Replay a trace. With no arguments: the bundled "
                            f"Philly day ({DEFAULT_TRACE}) on the Philly cluster under FIFO.")
    replay.add_argument("--trace", default=None,
                        help=f"trace file (default: bundled traces/{DEFAULT_TRACE})")
    replay.add_argument("--format", default="auto", choices=["auto", *sorted(LOADERS)],
                        help="trace format (default: detect)")
    replay.add_argument("--lenient", action="store_true",
                        help="skip bad rows and unrunnable jobs, and report them")
    replay.add_argument("--cluster", default=DEFAULT_CLUSTER,
                        help="cluster YAML file or bundled name (default: %(default)s)")
    replay.add_argument("--policy", default="fifo", help="policy name (see `dlsched policies`)")
    replay.add_argument("--param", action="append", type=_param, default=[], metavar="KEY=VALUE",
                        help="policy parameter, repeatable (e.g. --param backfill=easy)")
    replay.add_argument("--throughput", default="duration", choices=THROUGHPUT_MODELS,
                        help="throughput model (default: %(default)s)")
    replay.add_argument("--estimator", default="oracle",
                        help="oracle, noisy or noisy:<sigma> (default: %(default)s)")
    replay.add_argument("--seed", type=int, default=0)
    replay.add_argument("--restart-overhead", type=float, default=0.0, metavar="SECONDS",
                        help="cost of resuming a preempted job (default: 0)")
    replay.add_argument("--out", default=None, metavar="DIR",
                        help="save jobs/events/timeline (parquet) and summary (JSON) here")
    replay.add_argument("--json", action="store_true", help="print the summary as JSON")

    sub.add_parser("policies", help="list registered policies")
    return parser


def _fmt(key: str, value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if key.endswith("wall_s"):
            return f"{value:.3f} s"
        if key == "utilization" or key == "deadline_satisfaction":
            return f"{100 * value:.1f} %"
        if key.endswith("_s") or key in ("avg_jct", "makespan", "avg_queueing_delay",
                                         "total_tardiness", "avg_tardiness") or "jct" in key:
            text = f"{value:,.1f} s"
            return text + (f"  ({value / 3600:,.2f} h)" if abs(value) >= 3600 else "")
        return f"{value:,.3f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _replay(args: argparse.Namespace) -> int:
    trace = args.trace or str(bundled_trace(DEFAULT_TRACE))
    workload = load_trace(trace, format=args.format, lenient=args.lenient)
    cluster = load_cluster(args.cluster)
    result = simulate(workload, cluster, policy=args.policy, throughput=args.throughput,
                      estimator=args.estimator, seed=args.seed,
                      restart_overhead_s=args.restart_overhead, **dict(args.param))
    summary = result.summary()
    if args.out:
        result.save(args.out)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    params = ", ".join(f"{k}={v!r}" for k, v in args.param)
    print(f"dlsched {__version__}: {len(workload):,} jobs from {trace}")
    types = ", ".join(f"{count} {cluster.display_name(t)}"
                      for t, count in cluster.capacity_by_type().items())
    print(f"cluster {cluster.name}: {cluster.num_gpus:,} GPUs ({types})")
    print(f"policy {args.policy}{f' ({params})' if params else ''}, throughput {args.throughput}, "
          f"estimator {args.estimator}, seed {args.seed}")
    print()
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"  {key:<{width}}  {_fmt(key, value)}")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dlsched` command."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "replay":
            return _replay(args)
        return _policies()
    except (DlschedError, FileNotFoundError, ValueError) as exc:
        print(f"dlsched: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `dlsched replay --json | head`: the reader left, not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
