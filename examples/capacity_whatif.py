"""What-if capacity planning: one real day of Philly (2,302 jobs) on the Philly cluster.

Two clusters, edited as data with `Cluster.from_dict`: today's, and today's plus 4 servers
of 8 A100 given to the VC whose jobs wait longest; one FIFO queue per VC. Writes
``capacity-whatif.png`` and ``capacity-whatif.csv`` into the output folder (first argument
or $DLSCHED_EXAMPLES_OUT).
"""

import copy

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from _output import output_folder  # noqa: E402

import dlsched  # noqa: E402
from dlsched.bundled import resolve_cluster  # noqa: E402
from dlsched.cluster import Cluster  # noqa: E402

workload = dlsched.load_trace(dlsched.bundled_trace("philly_day.csv"))
today = yaml.safe_load(resolve_cluster("philly").read_text())


def run(config: dict) -> dlsched.SimulationResult:
    # one FIFO queue per VC: a strict FIFO over the whole cluster would let one VC block all
    return dlsched.simulate(workload, Cluster.from_dict(config), policy="per_vc", inner="fifo")


baseline = run(today)
waits = baseline.jobs.assign(vc=workload.jobs["vc"].to_numpy()).groupby("vc")["queueing_delay"]
busiest = waits.mean().idxmax()
print(f"VC {busiest} waits longest: {waits.mean().max() / 3600:.1f} h on average")

more_gpus = copy.deepcopy(today)  # 4 new servers of 8 A100, owned by that VC
more_gpus["gpu_types"]["A100"] = {"memory_gb": 80}
more_gpus["nodes"].append({"gpu_type": "A100", "count": 4, "gpus_per_node": 8, "name": "a100x8"})
vc = next(v for v in more_gpus["vcs"] if str(v["name"]) == busiest)
vc["nodes"] = list(vc["nodes"]) + [f"a100x8-{i}" for i in range(4)]

scenarios = {"today": baseline, "+32 A100 for the VC": run(more_gpus)}
rows = {}
for name, result in scenarios.items():
    jobs = result.jobs.assign(vc=workload.jobs["vc"].to_numpy())
    mine = jobs[jobs["vc"] == busiest]
    rows[name] = {
        "avg JCT, all (h)": result.summary()["avg_jct"] / 3600,
        f"avg wait, VC {busiest} (h)": mine["queueing_delay"].mean() / 3600,
        "avg wait, other VCs (h)": jobs[jobs["vc"] != busiest]["queueing_delay"].mean() / 3600,
    }
table = pd.DataFrame(rows).T
print(table.round(2).to_string())

out = output_folder()
table.to_csv(out / "capacity-whatif.csv", index_label="scenario")
figure, axis = plt.subplots(figsize=(7, 3.2), layout="constrained")
table.T.plot.barh(ax=axis)
axis.set(xlabel="hours", title="One Philly day, FIFO per VC: 32 more GPUs")
axis.legend(frameon=False)
figure.savefig(out / "capacity-whatif.png", dpi=120)
print(f"wrote {out / 'capacity-whatif.png'}")
