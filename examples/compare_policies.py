"""Compare policies on a contended cluster: Tiresias' 60-job trace on 8 P100 GPUs.

Writes ``compare-policies.png`` (JCT distribution and average JCT per policy) and
``compare-policies.csv`` (the summary, one row per policy) into the output folder:
``python examples/compare_policies.py OUT`` (or ``$DLSCHED_EXAMPLES_OUT``).
"""

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _output import output_folder  # noqa: E402

import dlsched  # noqa: E402

workload = dlsched.load_trace(dlsched.bundled_trace("tiresias_60_job.csv"))
cluster = dlsched.load_cluster("tiresias-8")  # 2 machines x 4 GPUs: jobs queue
policies = ["fifo", "sjf", "srtf", "tiresias"]

results = {p: dlsched.simulate(workload, cluster, p, restart_overhead_s=10) for p in policies}
table = pd.DataFrame({p: r.summary() for p, r in results.items()}).T
columns = ["avg_jct", "p95_jct", "makespan", "avg_queueing_delay", "preemptions"]
print(table[columns].round(1).to_string())

out = output_folder()
table[columns].to_csv(out / "compare-policies.csv", index_label="policy")

figure, (cdf, bars) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
for policy, result in results.items():
    jct_min = np.sort(result.jobs["jct"].to_numpy()) / 60
    cdf.step(jct_min, np.arange(1, len(jct_min) + 1) / len(jct_min), where="post", label=policy)
cdf.set(xscale="log", xlabel="job completion time (min, log scale)", ylabel="share of jobs")
cdf.set_xticks([2, 5, 10, 20, 50, 100], labels=["2", "5", "10", "20", "50", "100"])
cdf.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
cdf.set_title("JCT distribution")
cdf.legend(frameon=False)
bars.bar(policies, table["avg_jct"] / 60, color=[f"C{i}" for i in range(len(policies))])
bars.set(ylabel="average JCT (min)", title="60 jobs on 8 GPUs")
figure.savefig(out / "compare-policies.png", dpi=120)
print(f"wrote {out / 'compare-policies.png'}")
