"""Engine cost per SimPy event on the full Philly table under FIFO, against bare SimPy.

Replays the Pollux-preprocessed Philly table (82,247 jobs) on the Philly machine list under
FIFO and prints, in CPU seconds (`time.process_time`):

- the phases of one `simulate()`: building job specs, setting up the simulator (a state per
  job), the event loop, building the result;
- the events the engine processed — SimPy events (the ids the environment handed out: an
  arrival instant taken without a turn of the loop still uses up its id) plus the instants
  that asked for a scheduling call or whose call was counted as skipped at once
  (`Simulator._early_skips`; each instant was a SimPy event until the engine ran its own
  loop) — and events per CPU-second of the event loop;
- a bare SimPy loop of the same number of timeouts (one process yielding them), its events
  per CPU-second, and the ratio of the two: how many times SimPy's own cost per event the
  engine spends (the machine-independent figure; issue 16 aims at 5 or less);
- `simulate()` end to end.

Each figure is the best of ``--repeat`` runs (CPU time is noisy on a shared machine). The
event and job counts are asserted, so the benchmark cannot silently measure a smaller
workload. Run from the repository root with the shared data beside it:

    python benchmarks/engine_events.py [--policy fifo] [--repeat 3]

With ``--policy`` other than fifo the counts are printed, not asserted.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import simpy

import dlsched
from dlsched import policies
from dlsched.engine.simulator import Simulator, _no_full_collections
from dlsched.engine.specs import build_specs
from dlsched.metrics import build_result
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"

#: The full table under FIFO: one submit, start and finish per job.
FIFO_JOBS = 82_247
FIFO_JOB_EVENTS = 3 * FIFO_JOBS
#: SimPy events of that run: one per submit instant (75,583) and per completion.
FIFO_SIMPY_EVENTS = 157_830
#: Engine events: those, plus the 146,008 instants that asked for a scheduling call (or were
#: counted as skipped at their arrival or finish, the same instants). Until the
#: engine ran its own event loop each was a SimPy event too (303,838 SimPy events then), so
#: events per CPU-second stay comparable across versions.
FIFO_EVENTS = 303_838


def bare_simpy(n_events: int) -> tuple[float, int]:
    """CPU seconds and events of one SimPy process yielding `n_events - 2` timeouts (plus
    its Initialize and its end: `n_events` events in all)."""
    env = simpy.Environment()

    def loop() -> Any:
        for _ in range(n_events - 2):
            yield env.timeout(1.0)

    env.process(loop())
    started = time.process_time()
    env.run()
    return time.process_time() - started, next(env._eid)  # type: ignore[attr-defined]


def engine_phases(work: dlsched.Workload, cluster: dlsched.Cluster, policy: str) -> dict[str, Any]:
    """One replay split into its phases, as `dlsched.simulate` runs them (CPU seconds)."""
    truth = make_throughput("duration")
    chosen = policies.get(policy)
    with _no_full_collections():  # as `simulate` holds it
        t0 = time.process_time()
        specs, unschedulable = build_specs(work, cluster, truth, lenient=False)
        t1 = time.process_time()
        sim = Simulator(
            specs,
            cluster,
            chosen,
            truth,
            make_estimator("oracle"),
            make_overheads(getattr(chosen, "default_overheads", None), 0.0),
            skip=set(unschedulable),
        )
        t2 = time.process_time()
        sim.run()
        t3 = time.process_time()
        result = build_result(sim, {}, unschedulable)
        t4 = time.process_time()
    return {
        "specs_s": t1 - t0,
        "init_s": t2 - t1,
        "loop_s": t3 - t2,
        "result_s": t4 - t3,
        "simpy_events": next(sim.env._eid),  # type: ignore[attr-defined]
        # (0 on an engine whose scheduling instants were SimPy events: counted above)
        "scheduling_instants": getattr(sim, "scheduling_instants", 0),
        "job_events": len(result.events),
        "jobs_completed": int(result.summary()["jobs_completed"]),
        "scheduling_calls": sim.scheduling_calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work = dlsched.load_trace(args.trace, format="philly-pollux")
    cluster = dlsched.load_cluster("philly")
    runs = [engine_phases(work, cluster, args.policy) for _ in range(args.repeat)]
    phases = ("specs_s", "init_s", "loop_s", "result_s")
    best = {key: min(run[key] for run in runs) for key in phases}
    counts = runs[0]
    if args.policy == "fifo":
        assert counts["jobs_completed"] == len(work) == FIFO_JOBS, counts
        assert counts["job_events"] == FIFO_JOB_EVENTS, counts
        assert counts["simpy_events"] + counts["scheduling_instants"] == FIFO_EVENTS, counts
    n_events = counts["simpy_events"] + counts["scheduling_instants"]
    bare_s = min(bare_simpy(n_events)[0] for _ in range(args.repeat))
    end_to_end = []
    for _ in range(args.repeat):
        started = time.process_time()
        dlsched.simulate(work, cluster, policy=args.policy, audit=False)
        end_to_end.append(time.process_time() - started)

    engine_rate = n_events / best["loop_s"]
    bare_rate = n_events / bare_s
    print(f"{len(work):,} jobs, policy {args.policy}, best of {args.repeat} (CPU seconds)")
    print(
        f"  build_specs {best['specs_s']:.3f}  set-up {best['init_s']:.3f}  "
        f"event loop {best['loop_s']:.3f}  build_result {best['result_s']:.3f}  "
        f"simulate() {min(end_to_end):.3f}"
    )
    print(
        f"  {n_events:,} events ({counts['simpy_events']:,} SimPy events, "
        f"{counts['scheduling_instants']:,} scheduling instants), "
        f"{counts['job_events']:,} job events, {counts['scheduling_calls']:,} scheduling calls"
    )
    print(f"  engine      {engine_rate:>12,.0f} events per CPU-s")
    print(f"  bare SimPy  {bare_rate:>12,.0f} SimPy events per CPU-s")
    print(f"  ratio       {bare_rate / engine_rate:>12.1f} x SimPy's own cost per event")
    print(f"  per job     {min(end_to_end) / len(work) * 1e6:>12.1f} us of simulate()")


if __name__ == "__main__":
    main()
