"""Jobs without GPUs (``num_gpus`` 0, CPU and/or memory only; issue 15): the schema, the
openb loader, the engine (host slots, ledger, auditor, result) and how each GPU-sharing
strategy scores and places them, each against a hand-worked answer on a tiny cluster."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.engine.ledger import Ledger
from dlsched.engine.placement import PlacementContext
from dlsched.engine.sharing import (
    FGD,
    DotProduct,
    GpuClustering,
    GpuPacking,
    RandomFit,
    ShuffledTies,
    TypicalJob,
    WeightedBestFit,
)
from dlsched.errors import ConfigError, SchedulingError, TraceError
from dlsched.jobs import JobSpec
from dlsched.policies.fifo import Fifo
from dlsched.traces import alibaba_gpu
from dlsched.traces.schema import validate_jobs

OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time"
)


_Fifo = Fifo  # places jobs without GPUs through `view.place`


def _cluster(*groups: dict) -> Cluster:
    return Cluster.from_dict({"name": "tiny", "nodes": list(groups)})


def _two_nodes(cpus: float = 8) -> Cluster:
    """Two nodes of 2 V100s and `cpus` cores each."""
    return _cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": cpus})


def _jobs(rows: list[tuple]) -> pd.DataFrame:
    """(job_id, submit_time, num_gpus, duration, cpu_milli) rows as a workload frame."""
    return pd.DataFrame(
        rows, columns=["job_id", "submit_time", "num_gpus", "duration", "cpu_milli"]
    )


def _validate(frame: pd.DataFrame, lenient: bool = False):
    return validate_jobs(frame, "t.csv", lenient=lenient, fmt="canonical")


def _spec(index: int, gpus: int = 0, cpu: int = 0, mem: int = 0, milli: int = 0) -> JobSpec:
    return JobSpec(
        index, f"j{index}", 0.0, gpus, 100.0, gpu_milli=milli, cpu_milli=cpu, memory_mib=mem
    )


def _placer(kind, ledger: Ledger, seed: int = 0, **kw):
    return kind(PlacementContext(ledger, (), np.random.default_rng(seed)), **kw)


# ---- the schema and the openb loader ----------------------------------------------------


def test_a_job_without_gpus_is_valid_with_a_cpu_demand():
    """num_gpus 0 with a CPU demand loads, its gpu_milli 0 (no GPU share)."""
    work = _validate(_jobs([(1, 0.0, 0, 10.0, 4000)]))
    assert work.jobs["num_gpus"].tolist() == [0]
    assert work.jobs["gpu_milli"].tolist() == [0]


def test_a_job_without_gpus_must_ask_for_cpu_or_memory():
    """num_gpus 0 and no demand: an error naming the row and num_gpus."""
    with pytest.raises(TraceError, match="without a CPU or memory demand") as error:
        _validate(_jobs([(1, 0.0, 0, 10.0, 0)]))
    assert error.value.field == "num_gpus" and error.value.row == 2  # the line after the header


def test_a_job_without_gpus_cannot_ask_for_a_gpu_share():
    """num_gpus 0 with gpu_milli 500 is refused, naming gpu_milli."""
    frame = _jobs([(1, 0.0, 0, 10.0, 4000)]).assign(gpu_milli=[500])
    with pytest.raises(TraceError, match="must be 0 or empty") as error:
        _validate(frame)
    assert error.value.field == "gpu_milli"


def test_negative_gpu_counts_are_still_refused():
    """num_gpus -1: an error saying it must be >= 0."""
    with pytest.raises(TraceError, match="must be >= 0"):
        _validate(_jobs([(1, 0.0, -1, 10.0, 4000)]))


def _openb(tmp_path) -> str:
    path = tmp_path / "openb_pod_list_tiny.csv"
    path.write_text(
        OPENB_HEADER
        + "\nopenb-pod-0001,8000,1024,1,1000,,LS,Running,0,100,10"
        + "\nopenb-pod-0002,12000,2048,0,0,,BE,Running,5,60,6"
        + "\nopenb-pod-0003,4000,512,1,250,,BE,Succeeded,7,50,8\n"
    )
    return str(path)


def test_the_openb_loader_leaves_out_cpu_only_pods_by_default_and_counts_them(tmp_path):
    """Default: the CPU-only pod is excluded and counted under its reason."""
    work = alibaba_gpu.load(_openb(tmp_path))
    assert work.jobs["job_id"].tolist() == ["openb-pod-0001", "openb-pod-0003"]
    assert work.provenance["excluded"][alibaba_gpu.CPU_ONLY] == 1


def test_the_openb_loader_keeps_cpu_only_pods_as_jobs_without_gpus(tmp_path):
    """cpu_only=True: the CPU-only pod is a job with num_gpus 0, gpu_milli 0, its demand."""
    work = dlsched.load_trace(_openb(tmp_path), format="alibaba-gpu-2023", cpu_only=True)
    row = work.jobs.set_index("job_id").loc["openb-pod-0002"]
    assert (row["num_gpus"], row["gpu_milli"], row["cpu_milli"], row["memory_mib"]) == (
        0,
        0,
        12000,
        2048,
    )
    assert row["duration"] == 54.0
    assert alibaba_gpu.CPU_ONLY not in work.provenance["excluded"]


# ---- the engine --------------------------------------------------------------------------


def test_a_job_without_gpus_goes_where_its_cpu_fits():
    """Node 0 has 2 of 8 cores left after job a: job b (4 cores) goes to node 1, holds no
    GPU, and every GPU stays free for the GPU job c."""
    jobs = _jobs([("a", 0.0, 0, 10.0, 6000), ("b", 0.0, 0, 10.0, 4000), ("c", 0.0, 4, 5.0, 0)])
    result = dlsched.simulate(jobs, _two_nodes(), _Fifo(), audit=True)
    starts = result.events[result.events["event"] == "start"].set_index("job_id")
    assert starts.loc[["a", "b", "c"], "time"].tolist() == [0.0] * 3
    assert starts.loc["b", "num_gpus"] == 0 and starts.loc["b", "gpus"] == ""
    assert starts.loc["b", "held_cpu_milli"] == 4000
    assert result.jobs.set_index("job_id").loc[["a", "b"], "gpu_seconds"].tolist() == [0.0, 0.0]


def test_a_host_slot_holds_cpu_on_its_node_and_no_gpu():
    """Node 0's host slot (id 4, past the 4 GPU ids) takes the job's cores there and no GPU;
    giving it back frees them."""
    ledger = Ledger(_two_nodes())
    spec_a, spec_b = _spec(0, cpu=6000), _spec(1, cpu=4000)
    ledger.take(0, (ledger.host_slot(0),), 0, demands={0: (6000, 0)})
    assert ledger.hosting == {0: 1} and ledger.cpu_free == [2000, 8000]
    assert ledger.free_total == 4 and ledger.host_slot(0) == 4
    assert ledger.node_demands(spec_b, (ledger.host_slot(1),)) == {1: (4000, 0)}
    ledger.give_back(0, (ledger.host_slot(0),), 0)
    assert ledger.hosting == {} and ledger.cpu_free == [8000, 8000]
    assert spec_a.num_gpus == 0 and ledger.host_slot(1) == 5


def test_a_job_without_gpus_waits_for_cpu_and_starts_when_it_is_freed():
    """Both nodes' cores are taken until a ends at 10: d (4 cores, arriving at 1) starts
    then, and its JCT counts in the summary like any job's."""
    jobs = _jobs(
        [
            ("a", 0.0, 0, 10.0, 8000),
            ("b", 0.0, 0, 20.0, 6000),
            ("c", 0.0, 1, 5.0, 2000),
            ("d", 1.0, 0, 3.0, 4000),
        ]
    )
    result = dlsched.simulate(jobs, _two_nodes(), _Fifo(), audit=True)
    done = result.jobs.set_index("job_id")
    assert done.loc["d", "start_time"] == 10.0 and done.loc["d", "finish_time"] == 13.0
    assert result.summary()["avg_jct"] == pytest.approx((10 + 20 + 5 + 12) / 4)


def test_jobs_without_gpus_need_a_cluster_that_declares_cpus():
    """On a cluster without CPUs or memory: a ConfigError naming the job and the cluster."""
    cluster = _cluster({"gpu_type": "V100", "gpus_per_node": 2})
    with pytest.raises(ConfigError, match=r"job 'a' asks for no GPU.*cluster 'tiny'"):
        dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), cluster, _Fifo())


def test_a_policy_that_does_not_place_jobs_without_gpus_is_refused():
    """Tiresias does not say it places them: a ConfigError naming the policy and job."""
    with pytest.raises(ConfigError, match=r"job 'a' asks for no GPU.*policy 'tiresias'"):
        dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), _two_nodes(), "tiresias")


def test_a_job_without_gpus_given_gpus_is_refused():
    """A policy that hands GPU ids to a job without GPUs gets a SchedulingError."""

    class Wrong(_Fifo):
        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.pending.values()):
                alloc[job] = (0,)
            return alloc

    with pytest.raises(SchedulingError, match="give it one host slot"):
        dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), _two_nodes(), Wrong())


def test_a_job_without_gpus_that_no_node_can_hold_is_unschedulable():
    """12 cores on 8-core nodes: refused at load naming cpu_milli (counted when lenient)."""
    jobs = _jobs([("a", 0.0, 0, 10.0, 12000), ("b", 0.0, 1, 5.0, 0)])
    with pytest.raises(TraceError, match="no GPU, more than any") as error:
        dlsched.simulate(jobs, _two_nodes(), _Fifo())
    assert error.value.field == "cpu_milli"
    result = dlsched.simulate(_validate(jobs, lenient=True), _two_nodes(), _Fifo())
    assert result.summary()["jobs_unschedulable"] == 1


# ---- how each strategy scores and places a CPU-only pod ----------------------------------


def _scores(cpu_left_node0: int) -> dict[str, int]:
    """Each strategy's score of a 16-core CPU-only pod on node 0 (8 idle GPUs, 64 cores,
    `cpu_left_node0` of them free)."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "gpus_per_node": 8, "cpus": 64}))
    typical = (TypicalJob(32000, 1000, 1, None, 0.5), TypicalJob(4000, 500, 1, None, 0.5))
    out = {}
    for kind in (WeightedBestFit, DotProduct, GpuPacking, GpuClustering, RandomFit, FGD):
        placer = _placer(kind, ledger, typical=typical) if kind is FGD else _placer(kind, ledger)
        state = placer._state(0, ("v100", None), [])
        state.cpu_left = cpu_left_node0
        out[kind.__name__] = placer.score(state, _spec(1, cpu=16000), 0, 16000)
    return out


def test_each_strategy_scores_a_cpu_only_pod_as_the_authors_plugins_do():
    """Hand-worked, 8 idle GPUs and 40 of 64 cores free, a pod of 16 cores:
    BestFit 1 - (½·8000/8000 + ½·24000/128000) → 40; DotProd 1 - (40000/128000 ·
    16000/128000)/2 → 98; Packing and Clustering 0 (MinNodeScore for a pod without GPUs);
    Random 0; FGD: before, both typical jobs fit (no fragment); after, 24 cores are too few
    for the 32-core one (half the 8000 milli-GPUs) → 100·sigmoid(-4) → 1."""
    assert _scores(40000) == {
        "WeightedBestFit": int((1 - (0.5 * 8000 / 8000 + 0.5 * 24000 / 128000)) * 100),
        "DotProduct": int(100 * (1 - (40000 / 128000) * (16000 / 128000) / 2)),
        "GpuPacking": 0,
        "GpuClustering": 0,
        "RandomFit": 0,
        "FGD": int(100 / (1 + math.exp(4))),
    }
    assert _scores(40000)["WeightedBestFit"] == 40 and _scores(40000)["FGD"] == 1


def _three_nodes() -> Ledger:
    """Node 0: 1 GPU, 16 cores; node 1: 1 GPU, 64 cores; node 2: 1 GPU, 24 cores; all idle."""
    return Ledger(
        _cluster(
            {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 16},
            {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 64},
            {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 24},
        )
    )


@pytest.mark.parametrize(
    ("kind", "node"),
    [(GpuPacking, 1), (GpuClustering, 1), (WeightedBestFit, 2), (DotProduct, 2)],
)
def test_each_strategy_places_a_cpu_only_pod_on_its_node(kind, node):
    """A 20-core pod: node 0 cannot hold it. Packing and Clustering score it 0 everywhere, so
    the lowest index that fits (node 1) wins; BestFit takes the fewest cores left (node 2),
    and so does DotProd (free cores · demand is smallest there)."""
    ledger = _three_nodes()
    slot = _placer(kind, ledger).place(_spec(0, cpu=20000), 0, sorted(ledger.pool_capacity))
    assert slot == (ledger.host_slot(node),)


def test_a_node_holding_cpu_only_pods_is_not_scored_as_idle():
    """Node 0's GPU is free but a CPU-only pod holds 12 of its 16 cores: a GPU job asking 8
    cores under Packing skips it (the idle-node shortcut would have said 16 free)."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 1, "cpus": 16}))
    ledger.take(0, (ledger.host_slot(0),), 0, demands={0: (12000, 0)})
    gpus = _placer(GpuPacking, ledger).place(
        _spec(1, gpus=1, cpu=8000, milli=1000), 1, sorted(ledger.pool_capacity)
    )
    assert gpus == (1,)


def test_shuffled_ties_go_to_the_first_node_of_a_seeded_random_order():
    """Under ShuffledTies a CPU-only pod (Packing: a tie everywhere) goes to the node first
    in rng.permutation of the nodes, not to node 0."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "count": 6, "gpus_per_node": 1, "cpus": 16}))
    for seed in (0, 1, 2):
        context = PlacementContext(ledger, (), np.random.default_rng(seed))
        placer = ShuffledTies("gpu_packing")(context)
        first = int(np.random.default_rng(seed).permutation(6)[0])
        slot = placer.place(_spec(0, cpu=4000), 0, sorted(ledger.pool_capacity))
        assert slot == (ledger.host_slot(first),)


def test_shuffled_ties_needs_a_sharing_strategy():
    """A pool placer cannot be shuffled: a ValueError naming it."""
    context = PlacementContext(Ledger(_two_nodes()), (), np.random.default_rng(0))
    with pytest.raises(ValueError, match="consolidated"):
        ShuffledTies("consolidated")(context)


@pytest.mark.parametrize(
    "placement",
    ["fgd", "random", "dot_product", "gpu_packing", "gpu_clustering", "weighted_best_fit"],
)
def test_every_sharing_strategy_runs_cpu_only_jobs_within_the_invariants(placement):
    """A mixed workload (fractions, whole GPUs, CPU-only pods) under FIFO with greedy
    backfill and each strategy: all finish, the auditor finds nothing over-committed, the
    CPU-only jobs hold no GPU-seconds."""
    rows = []
    for i in range(24):
        gpus = (0, 1, 1, 2)[i % 4]
        rows.append((f"j{i}", float(i // 3), gpus, 5.0 + i % 7, 2000 + 1000 * (i % 5)))
    jobs = _jobs(rows).assign(gpu_milli=[(0, 500, 1000, 1000)[i % 4] for i in range(24)])
    cluster = _cluster({"gpu_type": "V100", "count": 3, "gpus_per_node": 2, "cpus": 12})
    policy = _Fifo(backfill="greedy", placement=placement)
    result = dlsched.simulate(jobs, cluster, policy, audit=True)
    assert (result.jobs["status"] == "finished").all()
    without = result.jobs[result.jobs["num_gpus"] == 0]
    assert len(without) == 6 and (without["gpu_seconds"] == 0).all()


def test_a_policy_may_give_a_job_without_gpus_a_host_slot_itself():
    """`view.host_slot(node)` places a job without GPUs where the policy says: node 1."""

    class OnNodeOne(_Fifo):
        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.pending.values()):
                alloc[job] = view.host_slot(1)
            return alloc

    result = dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), _two_nodes(), OnNodeOne())
    assert result.jobs["finish_time"].tolist() == [10.0]


def test_a_host_slot_of_a_node_that_does_not_exist_is_refused():
    """`view.host_slot(7)` on two nodes: a SchedulingError naming the node."""

    class Nowhere(_Fifo):
        def schedule(self, view):
            view.host_slot(7)

    with pytest.raises(SchedulingError, match="node 7 does not exist"):
        dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), _two_nodes(), Nowhere())


def test_place_honours_the_gpu_type_asked_for_a_job_without_gpus():
    """With gpu_type "k80" a job without GPUs goes to the K80 node, not the first node."""
    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 8},
        {"gpu_type": "K80", "gpus_per_node": 1, "cpus": 8},
    )

    class OnK80(_Fifo):
        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.pending.values()):
                alloc[job] = view.place(job, gpu_type="k80")
                assert view.place(job, gpu_type="v100", strategy="fgd") == view.host_slot(0)
            return alloc

    result = dlsched.simulate(_jobs([("a", 0.0, 0, 10.0, 4000)]), cluster, OnK80(), audit=True)
    starts = result.events[result.events["event"] == "start"]
    assert starts["gpu_type"].tolist() == ["K80"]


def test_a_ledger_refuses_gpu_ids_for_a_job_without_gpus():
    """`Ledger.take` of GPU 0 with milli 0 (no GPU): a SchedulingError asking for a slot."""
    ledger = Ledger(_two_nodes())
    with pytest.raises(SchedulingError, match="give it one host slot"):
        ledger.take(0, (0,), 0, demands={0: (1000, 0)})


def test_a_job_without_gpus_cannot_be_elastic():
    """num_gpus 0 with max_gpus 2: an error naming max_gpus."""
    frame = _jobs([(1, 0.0, 0, 10.0, 4000)]).assign(max_gpus=[2.0])
    with pytest.raises(TraceError, match="cannot grow to GPUs") as error:
        _validate(frame)
    assert error.value.field == "max_gpus"


def test_a_job_without_gpus_asking_more_memory_than_any_node_is_unschedulable():
    """64 GB on 16 GB nodes: refused at load naming memory_mib."""
    cluster = _cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 1, "host_memory_gb": 16})
    jobs = _jobs([("a", 0.0, 0, 10.0, 0)]).assign(memory_mib=[64 * 1024])
    with pytest.raises(TraceError, match="GB of memory and no GPU") as error:
        dlsched.simulate(jobs, cluster, _Fifo())
    assert error.value.field == "memory_mib"


def test_a_job_without_gpus_keeps_to_its_gpu_type_constraint():
    """gpu_constraint "K80": the CPU-only job goes to the K80 node, not the first node."""
    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 8},
        {"gpu_type": "K80", "gpus_per_node": 1, "cpus": 8},
    )
    jobs = _jobs([("a", 0.0, 0, 10.0, 4000)]).assign(gpu_constraint=["K80"])
    result = dlsched.simulate(jobs, cluster, _Fifo(), audit=True)
    starts = result.events[result.events["event"] == "start"]
    assert starts["gpu_type"].tolist() == ["K80"]


# ---- review 3 (F2-F7 and the streamed log) ---------------------------------------------------


@pytest.mark.parametrize("truth", ["scaling", "synergy"])
def test_a_throughput_model_without_a_rate_on_no_gpu_refuses_the_job_at_load(truth):
    """scaling and synergy have no rate for a job without GPUs: a TraceError naming the job,
    its num_gpus and the model (it crashed mid-run before)."""
    jobs = _jobs([("a", 0.0, 0, 10.0, 4000), ("b", 0.0, 1, 10.0, 2000)])
    with pytest.raises(TraceError, match=rf"job 'a'.*throughput model '{truth}'") as error:
        dlsched.simulate(jobs, _two_nodes(), _Fifo(), throughput=truth)
    assert error.value.field == "num_gpus"


def test_a_job_without_gpus_is_skipped_when_lenient_under_such_a_model():
    """Loaded leniently, the same job is unschedulable and the GPU job runs."""
    frame = _jobs([("a", 0.0, 0, 10.0, 4000), ("b", 0.0, 1, 10.0, 2000)])
    result = dlsched.simulate(
        _validate(frame, lenient=True), _two_nodes(), _Fifo(), throughput="scaling"
    )
    assert result.jobs.set_index("job_id")["status"].to_dict() == {
        "a": "unschedulable",
        "b": "finished",
    }


def test_per_type_durations_give_a_job_without_gpus_its_rate_under_any_model():
    """duration_v100 is the job's rate under scaling too: it runs for 5 s."""
    jobs = _jobs([("a", 0.0, 0, math.nan, 4000)]).assign(duration_v100=[5.0])
    result = dlsched.simulate(jobs, _two_nodes(), _Fifo(), throughput="scaling")
    assert result.jobs["finish_time"].tolist() == [5.0]


def test_the_learned_estimator_keys_a_cpu_only_stint_under_no_gpu():
    """A CPU-only job's measured rate is kept under 0 GPUs, never as a 1-GPU rate."""
    from dlsched.perf.learned import LearnedEstimator

    estimator = LearnedEstimator(min_observation_s=1.0)
    jobs = _jobs([("a", 0.0, 0, 10.0, 4000)])
    dlsched.simulate(jobs, _two_nodes(), _Fifo(), estimator=estimator)
    spec = JobSpec(0, "a", 0.0, 0, 10.0, cpu_milli=4000)
    assert estimator.measured(spec, "v100", 0, 1) == 1.0
    assert estimator.measured(spec, "v100", 1, 1) is None


def test_a_host_slot_has_no_occupants_after_packing():
    """A policy that packed two GPU jobs and then starts a CPU-only one: the neighbours'
    re-rating skips the host slot (an IndexError in Ledger.occupants before)."""
    from dlsched.policies.base import BasePolicy

    class Packer(BasePolicy):
        name = "packer"
        places_jobs_without_gpus = True

        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.pending.values()):
                if job.spec.job_id == "b":
                    alloc.pack(job, (0,))
                else:
                    alloc[job] = view.place(job)
            return alloc

    model = "ResNet-18 (batch size 32)"
    jobs = pd.DataFrame(
        [
            ("a", 0.0, 1, 10.0, 0, model, math.nan),
            ("b", 1.0, 1, 10.0, 0, model, math.nan),
            ("c", 2.0, 0, math.nan, 1000, None, 5.0),
        ],
        columns=[
            "job_id",
            "submit_time",
            "num_gpus",
            "duration",
            "cpu_milli",
            "model",
            "duration_v100",
        ],
    )
    cluster = _cluster({"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8})
    result = dlsched.simulate(jobs, cluster, Packer(), audit=True, throughput="gavel")
    assert result.jobs.set_index("job_id").loc["c", "finish_time"] == 7.0
    ledger = Ledger(cluster)
    assert ledger.occupants(ledger.host_slot(0)) == []


def test_the_view_reads_a_host_slots_node_and_type():
    """view.gpu_type_of / node_of of a running CPU-only job's host slot: its node's."""
    seen = {}

    class Probe(_Fifo):
        def schedule(self, view):
            for job in view.running.values():
                seen[job.spec.job_id] = (view.node_of(job.gpus[0]), view.gpu_type_of(job.gpus[0]))
            return super().schedule(view)

    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 1, "cpus": 8},
        {"gpu_type": "K80", "gpus_per_node": 1, "cpus": 8},
    )
    jobs = _jobs([("a", 0.0, 0, 10.0, 4000), ("b", 1.0, 1, 1.0, 0)]).assign(
        gpu_constraint=["K80", None]
    )
    dlsched.simulate(jobs, cluster, Probe())
    assert seen["a"] == (1, "k80")


def test_a_misplaced_host_slot_is_named_as_such():
    """Ledger.misplaced names a host slot "host slot of node 1", not a GPU id."""
    cluster = Cluster.from_dict(
        {
            "name": "vcs",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8, "name": "free"},
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8, "name": "own"},
            ],
            "vcs": [{"name": "a", "nodes": ["own-0"]}],
        }
    )
    ledger = Ledger(cluster)
    assert ledger.misplaced((ledger.host_slot(1),), None, None) == (
        "host slot of node 1 is on VC 'a''s nodes"
    )


def test_make_elastic_leaves_jobs_without_gpus_rigid():
    """make_elastic: a CPU-only row keeps empty bounds, so the workload validates again."""
    from dlsched.traces.transforms import make_elastic

    work = make_elastic(
        _validate(_jobs([("a", 0.0, 0, 10.0, 4000), ("b", 0.0, 1, 5.0, 0)])), max_gpus=4
    )
    bounds = work.jobs.set_index("job_id")[["min_gpus", "max_gpus"]]
    assert bounds.loc["a"].isna().all()
    assert bounds.loc["b"].tolist() == [1.0, 4.0]
    _validate(work.jobs)


def test_a_policy_is_not_refused_when_every_job_without_gpus_is_unschedulable():
    """Tiresias runs a lenient workload whose only CPU-only job can never run (12 cores
    on 8-core nodes): it is skipped, nothing to place."""
    frame = _validate(_jobs([("a", 0.0, 0, 10.0, 12000), ("b", 0.0, 1, 5.0, 0)]), lenient=True)
    result = dlsched.simulate(frame, _two_nodes(), "tiresias")
    assert result.summary()["jobs_unschedulable"] == 1


def test_shuffled_ties_is_a_registered_placement_name():
    """placement="gpu_packing:shuffled": a 1-GPU job on an idle cluster (a tie everywhere)
    goes to a seeded random node, not always node 0; same seed, same node."""
    cluster = _cluster({"gpu_type": "V100", "count": 8, "gpus_per_node": 1, "cpus": 8})
    jobs = _jobs([("g", 0.0, 1, 5.0, 1000)])

    def gpu(seed: int) -> str:
        result = dlsched.simulate(
            jobs, cluster, "fifo", placement="gpu_packing:shuffled", seed=seed
        )
        return result.events.loc[result.events["event"] == "start", "gpus"].iat[0]

    chosen = {gpu(seed) for seed in range(6)}
    assert len(chosen) > 1
    assert gpu(3) == gpu(3)


def test_sjf_takes_a_shuffled_ties_object_as_its_placement():
    """sjf(placement=ShuffledTies(...)): no lookup of the object by name."""
    from dlsched.policies.sjf import ShortestJobFirst

    jobs = _jobs([("a", 0.0, 0, 10.0, 4000), ("g", 0.0, 1, 5.0, 1000)])
    result = dlsched.simulate(
        jobs, _two_nodes(), ShortestJobFirst(placement=ShuffledTies("gpu_packing"))
    )
    assert (result.jobs["status"] == "finished").all()


def test_a_streamed_run_reports_cpu_utilisation_read_back_from_its_file(tmp_path):
    """events=path: summary() reads the held amounts back from the streamed file (0.375 as
    unstreamed); without the file named in meta the figure is NaN, never 0."""
    from dlsched.utilisation import utilisation_summary

    jobs = _jobs([("a", 0.0, 0, 10.0, 4000), ("g", 0.0, 2, 10.0, 2000)])
    cluster = _two_nodes()
    plain = dlsched.simulate(jobs, cluster, _Fifo())
    streamed = dlsched.simulate(jobs, cluster, _Fifo(), events=tmp_path / "ev.parquet")
    assert plain.summary()["cpu_utilization"] == 0.375
    assert streamed.summary()["cpu_utilization"] == 0.375
    assert utilisation_summary(streamed, cluster)["cpu_utilization"] == 0.375
    streamed.meta.pop("events_path")
    assert math.isnan(utilisation_summary(streamed, cluster)["cpu_utilization"])
