"""Policies that pick GPU ids themselves honour nodes' CPU and host memory (issue 15): on
clusters of 1–2 nodes where CPU, not GPUs, binds, a job waits instead of crashing the run;
`ClusterView.fits_resources` answers for the GPUs a job would hold; a policy that declares
it does not account them is refused before the run. Overheads are off unless a test says
otherwise, so the known answers are plain sums of durations and quanta."""

import pandas as pd
import pytest

import dlsched
from dlsched.errors import ConfigError
from dlsched.policies.base import BasePolicy
from dlsched.policies.fifo import Fifo


def one_node(cpus: float = 4) -> dlsched.Cluster:
    """One node of 2 V100s and `cpus` cores."""
    return dlsched.Cluster.from_dict(
        {
            "name": "tiny",
            "gpu_types": {"V100": {}},
            "nodes": [
                {"name": "n", "gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": cpus}
            ],
        }
    )


def two_jobs(first_s: float = 100.0, second_s: float = 50.0) -> pd.DataFrame:
    """A and B, one GPU each, each needing all 4 cores of `one_node()`."""
    return pd.DataFrame(
        {
            "job_id": ["A", "B"],
            "submit_time": [0.0, 0.0],
            "num_gpus": [1, 1],
            "duration": [first_s, second_s],
            "cpu_milli": [4000, 4000],
        }
    )


def spans(result: dlsched.SimulationResult) -> dict[str, tuple[float, float]]:
    """job id → (start, finish)."""
    table = result.jobs
    return {
        j: (s, f)
        for j, s, f in zip(table["job_id"], table["start_time"], table["finish_time"], strict=True)
    }


def test_gandiva_time_slices_jobs_whose_cpu_does_not_fit_together():
    """Gandiva homes B on the server (a free GPU, no CPU) and swaps A and B every quantum."""
    result = dlsched.simulate(two_jobs(100.0, 100.0), one_node(), "gandiva", overheads="none")
    assert spans(result) == {"A": (0.0, 160.0), "B": (60.0, 200.0)}
    preempts = result.events[result.events["event"] == "preempt"]
    assert list(zip(preempts["time"], preempts["job_id"], strict=True)) == [
        (60.0, "A"),
        (120.0, "B"),
    ]


def test_gandiva_skips_an_empty_server_without_the_jobs_cpu():
    """The lowest empty server has 2 cores; a job needing 6 starts on the next one."""
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "two",
            "gpu_types": {"V100": {}},
            "nodes": [
                {"name": "small", "gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 2},
                {"name": "big", "gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8},
            ],
        }
    )
    jobs = pd.DataFrame(
        {"job_id": ["A"], "submit_time": [0.0], "num_gpus": [1], "duration": [10.0]}
    ).assign(cpu_milli=6000)
    result = dlsched.simulate(jobs, cluster, "gandiva")
    start = result.events[result.events["event"] == "start"]
    assert start["gpus"].tolist() == ["2"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("hydra", {"B": (0.0, 50.0), "A": (50.0, 150.0)}),  # shortest first
        ("allox", {"A": (0.0, 100.0), "B": (100.0, 150.0)}),
        ("gavel_gandiva", {"A": (0.0, 100.0), "B": (100.0, 150.0)}),
        ("optimus", {"A": (0.0, 100.0), "B": (600.0, 650.0)}),  # next interval
    ],
)
def test_policy_runs_cpu_bound_jobs_one_after_the_other(policy, expected):
    """Two one-GPU jobs that each need the node's every core never run together."""
    assert spans(dlsched.simulate(two_jobs(), one_node(), policy)) == expected


class Probe(Fifo):
    """FIFO that records `view.fits_resources` answers once A runs."""

    def start(self, view):
        super().start(view)
        self.answers = None

    def schedule(self, view):
        alloc = super().schedule(view)
        view.wake_at(10.0)  # a call while A runs and B waits
        running = {job.job_id: job for job in view.running.values()}
        if self.answers is None and "A" in running:
            a = running["A"]
            b = view.pending["B"] if "B" in view.pending else None
            self.answers = (
                view.fits_resources(a, (1,)),  # A moving to the other GPU: its own CPU counts
                b is not None and view.fits_resources(b, (1,)),
                b is not None and view.fits_resources(b, (1,), idle=True),
            )
        return alloc


def test_fits_resources_counts_what_the_moving_job_holds():
    """A may move to the node's other GPU; B may not join it now, only on an idle node."""
    probe = Probe()
    dlsched.simulate(two_jobs(), one_node(), probe)
    assert probe.answers == (True, False, True)


def test_fits_resources_is_true_without_declared_capacities():
    """A cluster that declares no CPU holds any demand."""
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "plain",
            "gpu_types": {"V100": {}},
            "nodes": [{"name": "n", "gpu_type": "V100", "count": 1, "gpus_per_node": 2}],
        }
    )
    result = dlsched.simulate(two_jobs(), cluster, "gandiva", overheads="none")
    assert spans(result) == {"A": (0.0, 100.0), "B": (0.0, 50.0)}


class Unaware(BasePolicy):
    """A policy that declares it does not account CPU and memory."""

    name = "unaware"
    accounts_resources = False

    def schedule(self, view):
        return None


def test_a_policy_unaware_of_resources_is_refused_before_the_run():
    """The error names the policy, the demand and the remedies."""
    with pytest.raises(ConfigError, match=r"'unaware'.*cpu_milli.*cpus.*drop"):
        dlsched.simulate(two_jobs(), one_node(), Unaware())


def test_a_policy_unaware_of_resources_runs_without_demands():
    """Without CPU/memory demands the declaration changes nothing."""
    jobs = two_jobs().drop(columns="cpu_milli")

    class Starter(Unaware):
        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.pending.values()):
                gpus = view.place(job)
                if gpus is not None:
                    alloc[job] = gpus
            return alloc

    assert spans(dlsched.simulate(jobs, one_node(), Starter())) == {
        "A": (0.0, 100.0),
        "B": (0.0, 50.0),
    }


def test_per_vc_declares_what_its_inner_policy_declares(monkeypatch):
    """per-vc over a policy unaware of CPU/memory is refused before the run too."""
    monkeypatch.setattr(Fifo, "accounts_resources", False)
    with pytest.raises(ConfigError, match="'per-vc'"):
        dlsched.simulate(two_jobs(), one_node(), "per-vc")
