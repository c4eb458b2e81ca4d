"""Replay the full Philly job table (82,247 jobs) on the Philly machine list, per policy.

Prints, for each policy, the comparison the Tiresias/Gandiva issue asks for — average, p95
and p99 JCT and makespan (hours) — and the simulator's cost: wall seconds (and those spent
in the policy's `schedule`), jobs/s, scheduling calls, preemptions and peak memory, with
wall time and average JCT also as ratios to the first policy (machine-independent). Run
from the repository root with the shared data beside it:

    python benchmarks/philly_full.py        # fifo, srtf, tiresias, tiresias-gittins (+gandiva)
    python benchmarks/philly_full.py --policies fifo,tiresias:starvation_knob=8 --jobs 20000

Any registered policy name works in ``--policies``, with ``name:key=value`` parameters
(values parsed as YAML: ``true``, ``3``, ``easy``). The default list adds ``gandiva`` when
that policy is registered.

Source: ../shared/traces/philly/philly_jobs_pollux.csv.gz (Microsoft Philly, CC BY 4.0, as
pre-processed for Pollux). Submit times are seconds since the first job; ids are the row
positions in the file, so its 65 exact duplicate rows stay distinct jobs. Throughput model:
`duration` (the traced run times), zero overheads unless the policy names its own.

Peak memory is the maximum resident set size of the process that ran the policy: each policy
runs in a fresh process that loads the table itself, so the figure is per policy and
includes Python, pandas and the table. Wall time is the simulation's (`sim_wall_s`: building
job specs, the replay and the result tables), not the loading.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path
from typing import Any

import yaml

import dlsched

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"
DEFAULT_POLICIES = ("fifo", "srtf", "tiresias", "tiresias-gittins", "gandiva")


def philly_workload(path: Path, jobs: int | None) -> dlsched.Workload:
    """The Pollux-preprocessed Philly table as a canonical workload (ids = row positions)."""
    workload = dlsched.load_trace(path, format="philly-pollux")
    return workload.head(jobs) if jobs else workload


def peak_rss_mb() -> float:
    scale = 1024 if sys.platform != "darwin" else 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def parse_policies(text: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    """``fifo,tiresias:starvation_knob=8`` → [(label, name, params)]; unknown names fail."""
    registered = set(dlsched.policies.names())
    if text is None:
        return [(name, name, {}) for name in DEFAULT_POLICIES if name in registered]
    out = []
    for spec in (part.strip() for part in text.split(",") if part.strip()):
        name, *pairs = spec.split(":")
        if name not in registered:
            raise SystemExit(
                f"unknown policy {name!r}; registered: {', '.join(sorted(registered))}"
            )
        params = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise SystemExit(f"policy parameters are key=value, got {pair!r} in {spec!r}")
            params[key.strip()] = yaml.safe_load(value)
        out.append((spec, name, params))
    return out


def run_one(
    trace: Path, jobs: int | None, cluster: str, name: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Load, replay under one policy; the summary plus this process's peak memory."""
    workload = philly_workload(trace, jobs)
    result = dlsched.simulate(
        workload, dlsched.load_cluster(cluster), policy=name, audit=False, **params
    )
    summary = dict(result.summary())
    summary["peak_rss_mb"] = peak_rss_mb()
    summary["jobs_total"] = len(workload)
    return summary


def run_isolated(*args: Any) -> dict[str, Any]:
    """`run_one` in a fresh process, so that peak memory is per policy."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return pool.apply(run_one, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--cluster", default="philly")
    parser.add_argument(
        "--policies",
        default=None,
        help="comma-separated registered names, name:key=value for parameters "
        f"(default: {','.join(DEFAULT_POLICIES)}, those registered)",
    )
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run every policy in this process (peak memory then cumulative)",
    )
    args = parser.parse_args()
    policies = parse_policies(args.policies)

    started = time.perf_counter()
    workload = philly_workload(args.trace, args.jobs)
    load_s = time.perf_counter() - started
    cluster = dlsched.load_cluster(args.cluster)
    print(f"{len(workload):,} jobs loaded in {load_s:.2f} s; {cluster!r}", flush=True)
    del workload
    width = max(22, *(len(label) for label, _, _ in policies))
    header = (
        f"{'policy':<{width}} {'avg JCT h':>9} {'p95 JCT h':>9} {'p99 JCT h':>9} "
        f"{'makespan h':>10} {'wall s':>8} {'policy s':>8} {'jobs/s':>8} {'sched calls':>11} "
        f"{'preempt':>8} {'peak MB':>8} {'wall ×':>7} {'JCT ×':>6}"
    )
    print(header)
    first: dict[str, Any] | None = None
    for label, name, params in policies:
        run = run_one if args.in_process else run_isolated
        s = run(args.trace, args.jobs, args.cluster, name, params)
        first = first or s
        wall = s["sim_wall_s"]
        print(
            f"{label:<{width}} {s['avg_jct'] / 3600:>9.2f} {s['p95_jct'] / 3600:>9.2f} "
            f"{s['p99_jct'] / 3600:>9.2f} {s['makespan'] / 3600:>10.1f} {wall:>8.1f} "
            f"{s['scheduler_wall_s']:>8.1f} "
            f"{s['jobs_completed'] / wall:>8,.0f} {s['scheduling_calls']:>11,} "
            f"{s['preemptions']:>8,} {s['peak_rss_mb']:>8.0f} "
            f"{wall / first['sim_wall_s']:>7.2f} {s['avg_jct'] / first['avg_jct']:>6.2f}",
            flush=True,
        )
        assert s["jobs_completed"] == s["jobs_total"], s


if __name__ == "__main__":
    main()
