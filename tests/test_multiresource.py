"""CPU and host memory as resources: cluster capacities, job demands, the ledger's accounting,
unschedulable jobs, the auditor and the loaders' demand columns (issue 15, part 1)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.engine.audit import InvariantViolation
from dlsched.engine.ledger import UNLIMITED, Ledger
from dlsched.engine.simulator import Simulator
from dlsched.engine.specs import build_specs
from dlsched.errors import ConfigError, SchedulingError, TraceError
from dlsched.jobs import JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.policies.base import BasePolicy
from dlsched.traces.schema import validate_jobs

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"


def _cluster(*groups: dict) -> Cluster:
    return Cluster.from_dict({"name": "tiny", "nodes": list(groups)})


def _one_node(cpus: float = 8, memory_gb: float = 64) -> Cluster:
    """One node of 4 V100s, 8 cores and 64 GB."""
    return _cluster(
        {"gpu_type": "V100", "gpus_per_node": 4, "cpus": cpus, "host_memory_gb": memory_gb}
    )


def _spec(index: int = 0, gpus: int = 2, cpu_milli: int = 0, memory_mib: int = 0, **kw) -> JobSpec:
    return JobSpec(
        index, f"j{index}", 0.0, gpus, 100.0, cpu_milli=cpu_milli, memory_mib=memory_mib, **kw
    )


# ---- cluster files ------------------------------------------------------------------------


def test_node_groups_declare_cpus_and_host_memory():
    """`cpus` and `host_memory_gb` of a node group become every node's capacities."""
    cluster = _cluster(
        {"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "cpus": 32, "host_memory_gb": 256},
        {"gpu_type": "K80", "gpus_per_node": 2},
    )
    assert [(n.cpus, n.memory_gb) for n in cluster.nodes] == [(32.0, 256.0)] * 2 + [(None, None)]
    assert cluster.declares_cpus and cluster.declares_memory


def test_a_group_memory_gb_is_still_gpu_memory():
    """A node group's `memory_gb` keeps its meaning (GPU memory): it declares no host memory."""
    cluster = _cluster({"gpu_type": "V100", "memory_gb": 32})
    assert cluster.gpu_types["v100"].memory_gb == 32 and cluster.nodes[0].memory_gb is None
    assert Ledger(cluster).mem_free is None


@pytest.mark.parametrize(
    ("group", "key"),
    [
        ({"cpus": -1}, "nodes[0].cpus"),
        ({"cpus": "many"}, "nodes[0].cpus"),
        ({"host_memory_gb": -0.5}, "nodes[0].host_memory_gb"),
        ({"host_memory_gb": "64GB"}, "nodes[0].host_memory_gb"),
        ({"cpus": True}, "nodes[0].cpus"),
        ({"cpus": float("nan")}, "nodes[0].cpus"),
    ],
)
def test_a_bad_capacity_is_an_error_naming_file_and_key(tmp_path, group, key):
    """Negative or non-numeric `cpus`/`host_memory_gb` is a ConfigError naming file and key."""
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: x\nnodes:\n  - "
        + str({"gpu_type": "V100", **group}).replace("nan", ".nan").replace("True", "true")
        + "\n"
    )
    with pytest.raises(ConfigError) as error:
        dlsched.load_cluster(path)
    assert str(path) in str(error.value) and key in str(error.value)


def test_zero_capacity_is_allowed():
    """A node may declare 0 cores (it then runs only jobs without a CPU demand)."""
    ledger = Ledger(_one_node(cpus=0))
    assert ledger.cpu_free == [0] and ledger.fits_resources(0, 0, 0)
    assert not ledger.fits_resources(0, 1, 0)


# ---- the ledger -----------------------------------------------------------------------------


def test_gpu_only_clusters_account_nothing():
    """Without declared capacities cpu_free and mem_free are None and demands are ignored."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "gpus_per_node": 4}))
    assert ledger.cpu_free is None and ledger.mem_free is None and not ledger.tracks_resources
    ledger.take(0, (0, 1), demands={0: (10**9, 10**9)})
    assert ledger.reserved == {} and ledger.fits_resources(0, 10**9, 10**9)


def test_capacities_are_kept_in_milli_cpus_and_mib():
    """8 cores and 64 GB are 8000 milli-CPUs and 65,536 MiB."""
    ledger = Ledger(_one_node())
    assert ledger.cpu_free == [8000] and ledger.mem_free == [65_536]


def test_a_node_without_capacity_is_unlimited_where_others_declare_one():
    """A node that declares no cores, in a cluster where others do, never runs short."""
    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 4, "cpus": 8},
        {"gpu_type": "V100", "gpus_per_node": 4},
    )
    ledger = Ledger(cluster)
    assert ledger.cpu_free == [8000, UNLIMITED] and ledger.mem_free is None
    assert ledger.fits_resources(1, 10**12, 10**12) and not ledger.fits_resources(0, 8001, 0)


def test_demand_is_split_in_proportion_to_gpus_with_the_remainder_on_the_lowest_node():
    """10,001 milli-CPUs and 7 MiB over 3 + 2 GPUs on nodes 0 and 1: (6001, 5) and (4000, 2)."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "cpus": 8}))
    spec = _spec(gpus=5, cpu_milli=10_001, memory_mib=7)
    assert ledger.node_demands(spec, (1, 2, 3, 4, 5)) == {0: (6001, 5), 1: (4000, 2)}
    assert ledger.node_demands(spec, (5, 4, 3, 2, 1)) == {0: (6001, 5), 1: (4000, 2)}


def test_an_elastic_job_on_more_gpus_holds_its_per_gpu_demand_rounded_up():
    """Asked 1001 milli-CPUs for 4 GPUs, on 6 GPUs it holds ceil(1001 × 6 / 4) = 1502."""
    cluster = _cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "cpus": 8})
    ledger = Ledger(cluster)
    spec = _spec(gpus=4, cpu_milli=1001, min_gpus=1, max_gpus=8)
    demands = ledger.node_demands(spec, (0, 1, 2, 3, 4, 5))
    assert demands == {0: (1002, 0), 1: (500, 0)}
    assert sum(c for c, _ in demands.values()) == 1502


def test_a_fractional_job_puts_all_its_demand_on_its_node():
    """A job on half of one GPU holds its whole demand on that GPU's node."""
    ledger = Ledger(_one_node())
    spec = _spec(gpus=1, cpu_milli=3000, memory_mib=100, gpu_milli=500)
    assert ledger.node_demands(spec, (2,)) == {0: (3000, 100)}


def test_take_reserves_and_give_back_returns_exactly_it():
    """take(demands=...) lowers the free amounts; the old give_back call restores them."""
    ledger = Ledger(_one_node())
    spec = _spec(gpus=2, cpu_milli=6000, memory_mib=1024)
    ledger.take(0, (0, 1), demands=ledger.node_demands(spec, (0, 1)))
    assert ledger.cpu_free == [2000] and ledger.mem_free == [64_512]
    ledger.give_back(0, (0, 1), 1000, None)
    assert ledger.cpu_free == [8000] and ledger.mem_free == [65_536] and ledger.reserved == {}


def test_taking_more_cpu_than_a_node_has_is_refused_and_changes_nothing():
    """An over-large demand raises SchedulingError naming the job, node and resource."""
    ledger = Ledger(_one_node())
    with pytest.raises(SchedulingError, match=r"job index 3 .*node 0 .*milli-CPUs"):
        ledger.take(3, (0, 1), demands={0: (9000, 0)})
    with pytest.raises(SchedulingError, match=r"job index 3 .*node 0 .*MiB of memory"):
        ledger.take(3, (0, 1), demands={0: (0, 70_000)})
    assert ledger.owner[:2] == [-1, -1] and ledger.cpu_free == [8000] and not ledger.reserved


def test_a_job_takes_one_reservation_at_a_time():
    """Taking CPU again for a job that holds some, without giving it back, is refused."""
    ledger = Ledger(_one_node())
    ledger.take(0, (0,), demands={0: (1000, 0)})
    with pytest.raises(SchedulingError, match="already holds"):
        ledger.take(0, (1,), demands={0: (1000, 0)})


def test_only_the_declared_resource_is_held():
    """On a cluster that declares cores but no memory, a memory demand holds nothing."""
    ledger = Ledger(_cluster({"gpu_type": "V100", "gpus_per_node": 4, "cpus": 8}))
    ledger.take(0, (0,), demands={0: (1000, 4096)})
    assert ledger.reserved == {0: {0: (1000, 0)}} and ledger.mem_free is None


# ---- engine runs ----------------------------------------------------------------------------


class _FirstFit(BasePolicy):
    """In submit order, each waiting job on the lowest free GPUs of one node; a job the engine
    refuses (its node lacks CPU or memory) waits, and so do those behind it."""

    name = "first-fit-test"

    def schedule(self, view):
        alloc = view.allocation()
        for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
            free = view.free_gpus_on_node(0)
            if len(free) < state.spec.num_gpus:
                break
            try:
                alloc[state] = free[: state.spec.num_gpus]
            except SchedulingError:
                break
        return alloc


def _jobs(*rows: tuple) -> pd.DataFrame:
    """(job id, submit s, GPUs, duration s, cores) rows as a canonical table."""
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration", "num_cpus"])


def _run(table: pd.DataFrame, cluster: Cluster, policy: BasePolicy) -> Simulator:
    """A replay with the auditor on, returning the simulator (its ledger included)."""
    work = validate_jobs(table, "inline", lenient=False, fmt="canonical")
    truth = make_throughput("duration")
    specs, unschedulable = build_specs(work, cluster, truth, lenient=False)
    sim = Simulator(
        specs,
        cluster,
        policy,
        truth,
        make_estimator("oracle"),
        make_overheads(None, 0.0),
        skip=set(unschedulable),
        audit=True,
    )
    sim.run()
    return sim


def test_a_job_that_fits_the_gpus_but_not_the_cpus_waits():
    """6 + 4 cores on an 8-core node: the second job starts when the first ends, not at 0."""
    sim = _run(_jobs(("a", 0, 2, 100, 6), ("b", 0, 2, 50, 4)), _one_node(), _FirstFit())
    start = {s.job_id: s.start_time for s in sim.states}
    assert start == {"a": 0.0, "b": 100.0}


def test_the_same_jobs_without_capacities_run_together():
    """On a node that declares no cores the CPU demands bind nothing: both start at 0."""
    gpu_only = _cluster({"gpu_type": "V100", "gpus_per_node": 4})
    sim = _run(_jobs(("a", 0, 2, 100, 6), ("b", 0, 2, 50, 4)), gpu_only, _FirstFit())
    assert {s.job_id: s.start_time for s in sim.states} == {"a": 0.0, "b": 0.0}


def test_accounting_returns_to_full_after_all_jobs_end():
    """After the run every node's free CPU and memory is its capacity, and nothing is held."""
    table = _jobs(("a", 0, 1, 30, 3), ("b", 5, 2, 20, 4.5), ("c", 6, 1, 10, 0.5))
    table["memory_gb"] = [1.5, 2, 0]
    sim = _run(table, _one_node(), _FirstFit())
    assert sim.finished == 3
    assert sim.ledger.cpu_free == [8000] and sim.ledger.mem_free == [65_536]
    assert sim.ledger.reserved == {}


class _OverCommit(_FirstFit):
    """First fit, then 4 more cores forced onto node 0 behind the ledger's back."""

    def schedule(self, view):
        alloc = super().schedule(view)
        ledger = view._ledger
        for index, held in ledger.reserved.items():
            cpu, mem = held[0]
            ledger.reserved[index] = {0: (cpu + 4000, mem)}
            ledger.cpu_free[0] -= 4000
            break
        return alloc


def test_the_auditor_catches_an_over_committed_node():
    """A node holding 10 of its 8 cores fails the audit, naming the node and CPU."""
    with pytest.raises(InvariantViolation, match=r"node 0 .*over-committed.*CPU"):
        _run(_jobs(("a", 0, 2, 100, 6)), _one_node(), _OverCommit())


class _Drift(_FirstFit):
    """First fit, then node 0's free cores lowered with no job holding them."""

    def schedule(self, view):
        alloc = super().schedule(view)
        view._ledger.cpu_free[0] -= 1000
        return alloc


def test_the_auditor_catches_free_cpu_that_no_job_explains():
    """Free cores that differ from capacity less what jobs hold fail the audit."""
    with pytest.raises(InvariantViolation, match=r"node 0's free CPU is 1000"):
        _run(_jobs(("a", 0, 2, 100, 6)), _one_node(), _Drift())


# ---- unschedulable jobs ---------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(text)
    return path


def test_a_job_no_node_can_hold_is_an_error_naming_file_row_and_field(tmp_path):
    """9 cores on 8-core nodes: strict loading names the file, row and num_cpus."""
    path = _write(tmp_path, "job_id,submit_time,num_gpus,duration,num_cpus\na,0,1,10,9\n")
    with pytest.raises(TraceError) as error:
        dlsched.simulate(path, _one_node(), policy=_FirstFit())
    text = str(error.value)
    assert str(path) in text and "row 2" in text and "num_cpus" in text and "9 CPUs" in text


def test_memory_no_node_can_hold_names_the_memory_field(tmp_path):
    """100 GB on 64-GB nodes is refused on memory_mib, as the file spells it."""
    path = _write(tmp_path, "job_id,submit_time,num_gpus,duration,memory_mib\na,0,1,10,102400\n")
    with pytest.raises(TraceError, match="memory_mib"):
        dlsched.simulate(path, _one_node(), policy=_FirstFit())


def test_leniently_such_a_job_is_counted_unschedulable(tmp_path):
    """Loaded leniently, the job that can never fit is reported, the others run."""
    path = _write(
        tmp_path, "job_id,submit_time,num_gpus,duration,num_cpus\na,0,1,10,9\nb,0,1,10,2\n"
    )
    work = dlsched.load_trace(path, lenient=True)
    result = dlsched.simulate(work, _one_node(), policy=_FirstFit())
    summary = result.summary()
    assert summary["jobs_unschedulable"] == 1 and summary["jobs_completed"] == 1


def test_cpu_room_of_two_gpu_types_is_not_added_up():
    """16 cores over 8 GPUs: one 8-core V100 node and one 8-core K80 node never hold it."""
    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 8, "cpus": 8},
        {"gpu_type": "K80", "gpus_per_node": 8, "cpus": 8},
    )
    work = validate_jobs(
        _jobs(("a", 0, 8, 10, 16), ("b", 0, 8, 10, 8)), "x", lenient=True, fmt="canonical"
    )
    _, unschedulable = build_specs(work, cluster, make_throughput("duration"), lenient=True)
    assert list(unschedulable) == [0] and "16 CPUs" in unschedulable[0]


def test_a_demand_that_fits_only_when_split_over_nodes_is_schedulable():
    """12 cores over 4 GPUs fit two 8-core nodes of 2 GPUs (6 + 6), so the job is kept."""
    cluster = _cluster({"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8})
    work = validate_jobs(
        _jobs(("a", 0, 4, 10, 12), ("b", 0, 4, 10, 17)), "x", lenient=True, fmt="canonical"
    )
    _, unschedulable = build_specs(work, cluster, make_throughput("duration"), lenient=True)
    assert list(unschedulable) == [1] and "17 CPUs" in unschedulable[1]


# ---- the canonical columns ------------------------------------------------------------------


def test_cores_and_gb_become_exact_milli_cpus_and_mib():
    """1.5 cores → 1500; 29.296875 GB → 30,000 MiB; 0.1 GB rounds up to 103 MiB; empty → 0."""
    table = _jobs(("a", 0, 1, 5, 1.5), ("b", 0, 1, 5, None), ("c", 0, 1, 5, 0.0001))
    table["memory_gb"] = [29.296875, 0.1, None]
    jobs = validate_jobs(table, "x", lenient=False, fmt="canonical").jobs
    assert jobs["cpu_milli"].tolist() == [1500, 0, 1]
    assert jobs["memory_mib"].tolist() == [30_000, 103, 0]
    assert "num_cpus" not in jobs.columns and "memory_gb" not in jobs.columns


def test_a_table_without_demands_gets_no_demand_columns():
    """GPU-only workloads keep exactly their old columns."""
    table = _jobs(("a", 0, 1, 5, 1)).drop(columns="num_cpus")
    jobs = validate_jobs(table, "x", lenient=False, fmt="canonical").jobs
    assert "cpu_milli" not in jobs.columns and "memory_mib" not in jobs.columns


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("num_cpus", "-1", "must be a finite number >= 0"),
        ("num_cpus", "four", "is not a number"),
        ("cpu_milli", "1.5", "must be a whole number >= 0"),
        ("memory_gb", "inf", "must be a finite number >= 0"),
        ("memory_mib", "-3", "must be a whole number >= 0"),
        ("num_cpus", "1e16", "below 4.61e+15"),
        ("memory_gb", "1e300", "must be a finite number >= 0 and below"),
    ],
)
def test_a_bad_demand_is_an_error_naming_file_row_and_field(tmp_path, column, value, reason):
    """Negative, non-numeric, huge or fractional milli demands: an error naming file, row,
    field (a huge one used to become no demand at all)."""
    path = _write(
        tmp_path, f"job_id,submit_time,num_gpus,duration,{column}\na,0,1,10,1\nb,0,1,10,{value}\n"
    )
    with pytest.raises(TraceError) as error:
        dlsched.load_trace(path)
    text = str(error.value)
    assert str(path) in text and "row 3" in text and column in text and reason in text


def test_both_spellings_of_one_demand_are_refused(tmp_path):
    """num_cpus and cpu_milli together would be ambiguous: an error naming the file."""
    path = _write(
        tmp_path, "job_id,submit_time,num_gpus,duration,num_cpus,cpu_milli\na,0,1,10,1,1000\n"
    )
    with pytest.raises(TraceError, match="keep one of them"):
        dlsched.load_trace(path)


def test_demands_reach_the_job_specs():
    """build_specs copies cpu_milli and memory_mib into JobSpec."""
    table = _jobs(("a", 0, 1, 5, 2))
    table["memory_mib"] = [512]
    work = validate_jobs(table, "x", lenient=False, fmt="canonical")
    specs, _ = build_specs(work, _one_node(), make_throughput("duration"), lenient=False)
    assert (specs[0].cpu_milli, specs[0].memory_mib) == (2000, 512)


# ---- loaders --------------------------------------------------------------------------------

# The first three pods of openb_pod_list_default.csv (alibaba/clusterdata
# cluster-trace-gpu-v2023 @ 7a6c496e, real).
OPENB_HEAD = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    """openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
openb-pod-0002,12000,24576,1,1000,,LS,Running,1558381,12902960,1558381
"""
)


def test_openb_pods_carry_their_cpu_and_memory_requests(tmp_path):
    """The openb loader fills cpu_milli and memory_mib as traced (real first pods)."""
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(OPENB_HEAD)
    jobs = dlsched.load_trace(path, format="alibaba-gpu-2023").jobs
    assert jobs["cpu_milli"].tolist() == [12000, 6000, 12000]
    assert jobs["memory_mib"].tolist() == [16384, 12288, 24576]
    assert str(jobs["cpu_milli"].dtype) == "int64"


def test_openb_negative_cpu_is_an_error_naming_the_row(tmp_path):
    """A pod with cpu_milli -1 is refused, naming the file, its line and cpu_milli."""
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(OPENB_HEAD.replace("openb-pod-0001,6000", "openb-pod-0001,-1"))
    with pytest.raises(TraceError) as error:
        dlsched.load_trace(path, format="alibaba-gpu-2023")
    assert "row 3" in str(error.value) and "cpu_milli" in str(error.value)


def test_pai_jobs_sum_their_tasks_plan_cpu_and_plan_mem():
    """PAI: Σ inst_num × plan_cpu × 10 milli-CPUs and Σ inst_num × plan_mem GB, ps included."""
    jobs = dlsched.load_trace(DATA / "alibaba_pai").jobs.set_index("job_id")
    # j1: one worker, 600 % and 29.3 GB; j2: ps 800 % / 30 GB + 3 workers of 400 % / 20 GB
    assert jobs.loc["j1", "cpu_milli"] == 6000 and jobs.loc["j1", "memory_mib"] == 30_004
    assert jobs.loc["j2", "cpu_milli"] == 20_000 and jobs.loc["j2", "memory_mib"] == 92_160


def test_pai_negative_plan_cpu_names_the_task_file_row_and_field(tmp_path):
    """A task with plan_cpu -600 is an error naming the task table, its line and plan_cpu."""
    folder = tmp_path / "pai"
    folder.mkdir()
    for name in ("pai_job_table.csv", "pai_task_table.csv"):
        text = (DATA / "alibaba_pai" / name).read_text()
        if name == "pai_task_table.csv":
            text = text.replace(
                "j1,worker,1.0,Terminated,1010.0,4610.0,600.0",
                "j1,worker,1.0,Terminated,1010.0,4610.0,-600.0",
            )
        (folder / name).write_text(text)
    with pytest.raises(TraceError) as error:
        dlsched.load_trace(folder)
    assert "pai_task_table.csv" in str(error.value) and "plan_cpu" in str(error.value)


def test_helios_jobs_ask_for_their_cpu_num():
    """Helios: cpu_milli = cpu_num × 1000; cpu_num stays as traced."""
    jobs = dlsched.load_trace(DATA / "helios_cluster_log.csv", format="helios").jobs
    assert (jobs["cpu_milli"] == jobs["cpu_num"] * 1000).all()
    assert jobs["cpu_milli"].tolist()[:2] == [1000, 16000]


# ---- bundled clusters -----------------------------------------------------------------------


def test_the_openb_cluster_declares_each_node_s_cores_and_memory():
    """alibaba-openb-2023: G2 nodes have 96 cores and 384 GB, as openb's node list says."""
    cluster = dlsched.load_cluster("alibaba-openb-2023")
    g2 = [n for n in cluster.nodes if n.gpu_type == "g2"]
    assert len(g2) == 549 and {(n.cpus, n.memory_gb) for n in g2} == {(96.0, 384.0)}
    assert all(n.cpus is not None and n.memory_gb is not None for n in cluster.nodes)


def test_the_openb_cluster_totals_match_the_node_list():
    """Cores and memory summed over the bundled cluster equal the raw node list's."""
    raw = SHARED / "traces/alibaba_gpu_v2023/openb_node_list_gpu_node.csv.gz"
    if not raw.exists():
        pytest.skip("needs ../shared/traces/alibaba_gpu_v2023")
    nodes = pd.read_csv(raw)
    cluster = dlsched.load_cluster("alibaba-openb-2023")
    assert sum(n.cpus for n in cluster.nodes) * 1000 == nodes["cpu_milli"].sum()
    assert sum(n.memory_gb for n in cluster.nodes) * 1024 == nodes["memory_mib"].sum()


def test_the_pai_cluster_declares_cap_cpu_and_cap_mem():
    """alibaba-pai-2020: P100 machines 64 cores / 512 GB; V100 split 384 / 512 GB."""
    cluster = dlsched.load_cluster("alibaba-pai-2020")
    by_type: dict[str, set] = {}
    for n in cluster.nodes:
        by_type.setdefault(n.gpu_type, set()).add((n.cpus, n.memory_gb))
    assert by_type["p100"] == {(64.0, 512.0)}
    assert by_type["v100"] == {(96.0, 384.0), (96.0, 512.0)}


def test_a_bad_capacity_in_an_inventory_names_file_row_and_column(tmp_path):
    """An openb node list with cpu_milli 'n/a' is a ConfigError naming file, row, column."""
    from dlsched.traces.inventories import openb_cluster

    path = tmp_path / "nodes.csv"
    path.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,n/a,262144,2,P100\n"
    )
    with pytest.raises(ConfigError, match=r"nodes.csv: row 3, column 'cpu_milli'"):
        openb_cluster(path)


@pytest.mark.parametrize("name", ["philly", "helios-venus", "helios-earth"])
def test_clusters_whose_inventories_list_no_cpus_declare_none(name):
    """Philly and Helios inventories give no per-node CPU or memory: nothing is invented."""
    ledger = Ledger(dlsched.load_cluster(name))
    assert ledger.cpu_free is None and ledger.mem_free is None


class _TriesABadMove(BasePolicy):
    """Starts each job on GPU 0; at each round tries to move it to GPU 2 (a node without
    cores for it), catches the refusal and goes on."""

    name = "tries-a-bad-move"
    round_s = 5.0

    def schedule(self, view):
        alloc = view.allocation()
        for job in list(view.pending.values()):
            alloc[job.job_id] = (0,)
        for job in list(view.running.values()):
            try:
                alloc[job.job_id] = (2,)
            except SchedulingError:
                pass
        return alloc


def test_a_refused_move_leaves_the_job_holding_what_it_held():
    """After a move refused for want of cores, the job keeps GPU 0 and its cores (audited)."""
    cluster = _cluster(
        {"gpu_type": "V100", "gpus_per_node": 2, "cpus": 8},
        {"gpu_type": "V100", "gpus_per_node": 2, "cpus": 2},
    )
    work = validate_jobs(_jobs(("a", 0, 1, 12, 4)), "x", lenient=False, fmt="canonical")
    result = dlsched.simulate(work, cluster, _TriesABadMove(), audit=True)
    assert result.jobs["finish_time"].tolist() == [12.0]
    assert result.jobs["migrations"].tolist() == [0]
