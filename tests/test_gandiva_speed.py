"""Gandiva's shortcuts (issue 16): the work it skips must be work that could change nothing.

Each test checks that a shortcut is taken where it is exact, and not taken where it would
change a decision (`tests/test_gandiva.py` has the known answers of the policy itself)."""

from test_gandiva import Table, cluster, finish_times, jobs

import dlsched
from dlsched.policies import gandiva as gandiva_module
from dlsched.policies.gandiva import Gandiva


class TypedTable(Table):
    """`Table`, where packed pairs run only on the GPU types in `pack_on` (elsewhere the pair
    was never measured: it does not fit)."""

    def __init__(self, pairs, pack_on):
        super().__init__(pairs)
        self.pack_on = pack_on

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        if colocated and gpu_type.lower() not in self.pack_on:
            return 0.0
        return super().throughput(model, gpu_type, n_gpus, n_nodes, colocated)


class CountingTrials(Gandiva):
    """Gandiva that counts its packing trials per GPU type."""

    def start(self, view):
        super().start(view)
        self.trials = {}

    def _try_pack(self, server):
        self.trials[server.gpu_type] = self.trials.get(server.gpu_type, 0) + 1
        super()._try_pack(server)


def two_types():
    """One 1-GPU V100 server and one 1-GPU K80 server."""
    return dlsched.Cluster.from_dict(
        {
            "name": "two",
            "nodes": [
                {"gpu_type": "V100", "gpus_per_node": 1, "count": 1},
                {"gpu_type": "K80", "gpus_per_node": 1, "count": 1},
            ],
        }
    )


def test_no_packing_trial_when_no_pair_fits():
    """Duration replay measures no pair: the over-subscribed server time-slices (3 jobs on
    2 GPUs) without a single packing trial."""
    work = jobs(("A", 0, 1, 150), ("B", 0, 1, 160), ("C", 0, 1, 150))
    policy = CountingTrials()
    result = dlsched.simulate(work, cluster(), policy)
    assert policy.trials == {}
    assert policy.stats["switches"] == 3
    assert finish_times(result) == {"A": 211.0, "B": 221.0, "C": 242.0}


def test_packing_trials_run_only_on_types_where_a_pair_fits():
    """Pairs fit on V100 only: the V100 server packs its two jobs, the K80 server
    time-slices its two and never runs a trial."""
    truth = TypedTable({("good", "good"): 0.8}, pack_on={"v100"})
    work = jobs(
        ("A", 0, 1, 200, "good"),
        ("B", 0, 1, 200, "good"),
        ("C", 0, 1, 200, "good"),
        ("D", 0, 1, 200, "good"),
    )
    policy = CountingTrials()
    dlsched.simulate(work, two_types(), policy, throughput=truth)
    v100, k80 = (server.gpu_type for server in policy._servers)
    assert policy.trials.get(v100, 0) >= 1
    assert k80 not in policy.trials
    assert policy.stats["packs"] == 1
    assert policy.stats["switches"] >= 1  # the K80 pair took turns


def test_a_pair_homed_later_starts_packing_trials():
    """Only the third model fits beside the first: trials start once it is homed, and it is
    packed beside a job of the first model."""
    truth = Table({("a", "c"): 0.8, ("c", "a"): 0.8})
    work = jobs(("A", 0, 1, 300, "a"), ("B", 0, 1, 300, "b"), ("C", 30, 1, 300, "c"))
    policy = CountingTrials(oversubscription=3)
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    assert policy.stats["packs"] >= 1
    packed = result.events[(result.events["event"] == "start") & (result.events["job_id"] == "C")]
    assert len(packed) == 1 and packed["gpus"].iloc[0] == "0"


def test_many_models_keep_packing_trials_on(monkeypatch):
    """Past the bound on models checked per GPU type and count, trials run on that type
    without checking pairs first (here: 3 models over a bound of 2, no pair fits)."""
    monkeypatch.setattr(gandiva_module, "_MAX_PAIR_MODELS", 2)
    work = jobs(*((f"J{i}", 0, 1, 100, f"m{i}") for i in range(3)))
    policy = CountingTrials(oversubscription=3)
    dlsched.simulate(work, cluster(1, 1), policy, throughput=Table())
    assert sum(policy.trials.values()) >= 1
    assert policy.stats["packs"] == 0


def test_a_job_for_a_full_gpu_type_over_subscribes():
    """Both GPUs busy: a new job skips the placements that need free GPUs and joins the
    least-loaded server of its affinity as a waiting job (it starts at the next quantum)."""
    work = jobs(("A", 0, 1, 500), ("B", 0, 1, 500), ("C", 10, 1, 100))
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(), policy)
    starts = result.events[result.events["event"] == "start"].set_index("job_id")["time"]
    assert starts["C"] == 60.0
    assert policy.stats["switches"] >= 1


def test_time_slicing_inside_a_vc_quota():
    """The rotation of `test_time_slicing_three_jobs_on_two_gpus` with the three jobs in a
    VC with a quota of 3 GPUs (2 running, so the third may over-subscribe): a displaced job
    gives its GPU back to its own VC, so the quota never stops a switch."""
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "q",
            "nodes": [{"gpu_type": "V100", "gpus_per_node": 2, "count": 1}],
            "vcs": [{"name": "a", "gpus": 3}],
        }
    )
    work = jobs(
        ("A", 0, 1, 150, "a"),
        ("B", 0, 1, 160, "a"),
        ("C", 0, 1, 150, "a"),
        columns=("job_id", "submit_time", "num_gpus", "total_steps", "vc"),
    )
    policy = Gandiva()
    result = dlsched.simulate(work, hardware, policy)
    assert finish_times(result) == {"A": 211.0, "B": 221.0, "C": 242.0}
    assert policy.stats["switches"] == 3
    assert policy._vc_waiting == {}  # nobody waits at the end


def test_time_slicing_with_cpu_demands_that_fit():
    """The same rotation on a node with 4 CPUs, each job asking for 2: the two running jobs
    hold all of them, and each switch frees the CPUs the resumed job needs."""
    hardware = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "gpus_per_node": 2, "count": 1, "cpus": 4}]}
    )
    work = jobs(
        ("A", 0, 1, 150, 2000),
        ("B", 0, 1, 160, 2000),
        ("C", 0, 1, 150, 2000),
        columns=("job_id", "submit_time", "num_gpus", "total_steps", "cpu_milli"),
    )
    result = dlsched.simulate(work, hardware, Gandiva())
    assert finish_times(result) == {"A": 211.0, "B": 221.0, "C": 242.0}


def test_host_memory_freed_without_a_whole_gpu_reoffers_the_server_at_once():
    """W (VC a) waits for host memory beside a free GPU; fraction F of VC a finishes at 150 and
    frees the memory, but its GPU stays shared with F2: W starts at 150, not at the next round
    (180) — a VC without a quota still re-offers its servers when nodes track memory."""
    import pandas as pd

    from dlsched.overheads import make_overheads

    three = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": "V100", "gpus_per_node": 3, "count": 1, "host_memory_gb": 16}],
        }
    )
    columns = ["job_id", "submit_time", "duration", "memory_mib", "gpu_milli", "vc"]
    rows = [
        ("A", 0.0, 1000.0, 4000, 1000, None),
        ("F", 0.0, 150.0, 10000, 500, "a"),
        ("F2", 0.0, 1000.0, 0, 500, None),
        ("W", 130.0, 10.0, 8000, 1000, "a"),
    ]
    work = pd.DataFrame(rows, columns=columns).assign(num_gpus=1)
    result = dlsched.simulate(work, three, "gandiva", overheads=make_overheads(None, 0.0))
    starts = result.jobs.set_index("job_id")["start_time"]
    assert starts["W"] == 150.0
