"""Hypothesis strategies for random clusters and workloads, shared by the property tests.

Clusters: 1–3 of the GPU types every throughput model knows (V100, P100, K80), 1–4 node
groups of 1–4 nodes with 1–8 GPUs per node, a price per GPU type, optionally 1–2 virtual
clusters that own nodes and/or have a GPU quota, optionally CPU cores and host memory
declared on some node groups. Workloads: 1–25 jobs that can all run on
the cluster (each fits a GPU pool its VC may use, and asks only for GPU counts the chosen
throughput model has a rate for), submit times 0–500 s with ties, durations 1–1000 s, integer
or text job ids; optional columns on request: model, user, VC, deadline, priority weight,
elastic bounds, fractional `gpu_milli`, CPU/memory demands (`cpu_milli`, `memory_mib`).
"""

from __future__ import annotations

from functools import cache

import pandas as pd
from hypothesis import strategies as st

import dlsched
from dlsched.perf import ProfileTable

GPU_TYPES = ("V100", "P100", "K80")
"""Types known to every throughput model (`duration`, `gavel`, `scaling`)."""

PRICES = {"V100": 2.48, "P100": 1.46, "K80": 0.45}
"""$/GPU-hour (cloud list prices of Gavel's cost experiments), for the cost policies."""

FREE_MODELS = ("ResNet-50 (batch size 32)", "VGG16", "LM (batch size 20)", "A3C", "my-model")
"""Model names for type-agnostic truths (`duration`, `scaling`): Gavel's, a placement-
sensitive one (VGG, Tiresias §4) and one nobody profiled."""

MAX_JOBS = 25


@cache
def gavel_counts() -> dict[str, dict[str, tuple[int, ...]]]:
    """Model name → GPU type key → GPU counts with a positive rate in Gavel's table (some
    are measured as 0: ResNet-50 with batch 128 does not fit 2+ K80s)."""
    table = ProfileTable.gavel()
    return {
        name: {
            t: tuple(
                n for n in table.measured_counts(name, t) if table.throughput(name, t, n, 1) > 0
            )
            for t in table.gpu_types
        }
        for name in sorted(table.model_names.values())
    }


def counts_for(throughput: str, room: dict[str, int], model: str | None) -> list[int]:
    """GPU counts (1–8) a job of `model` can run with on some GPU type of `room` (type key →
    GPUs its pool has), under the throughput model named `throughput`."""
    biggest = min(8, max(room.values()))
    if throughput != "gavel":
        return list(range(1, biggest + 1))
    assert model is not None, "Gavel's table needs a model name"
    positive = gavel_counts()[model]
    return sorted({n for t, cap in room.items() for n in positive[t] if n <= cap})


def models_for(throughput: str) -> tuple[str | None, ...]:
    """Model names a job may carry under this throughput model (None: no model)."""
    if throughput == "gavel":
        return tuple(gavel_counts())
    if throughput == "duration":
        return (None, *FREE_MODELS)
    return FREE_MODELS


@st.composite
def clusters(
    draw: st.DrawFn, vcs: bool = False, always_vcs: bool = False, resources: bool = False
) -> dlsched.Cluster:
    """1–4 node groups over 1–3 of V100/P100/K80, 1–4 nodes of 1–8 GPUs each; with `vcs`,
    maybe (with `always_vcs`, always) 1–2 virtual clusters, each owning up to 3 nodes
    and/or holding a GPU quota; with `resources`, maybe CPU cores (1–8 per GPU) and host
    memory (4–64 GB per GPU) on some node groups (a group without them is unlimited)."""
    types = draw(st.lists(st.sampled_from(GPU_TYPES), min_size=1, max_size=3, unique=True))
    groups = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "gpu_type": st.sampled_from(types),
                    "count": st.integers(1, 4),
                    "gpus_per_node": st.integers(1, 8),
                }
            ),
            min_size=1,
            max_size=4,
        )
    )
    if resources and draw(st.booleans()):
        for group in groups:
            if draw(st.booleans()):
                group["cpus"] = group["gpus_per_node"] * draw(st.integers(1, 8))
            if draw(st.booleans()):
                group["host_memory_gb"] = group["gpus_per_node"] * draw(st.integers(4, 64))
    data: dict = {
        "name": "random",
        "gpu_types": {t: {"cost_per_hour": PRICES[t]} for t in types},
        "nodes": [{**g, "name": f"g{i}"} for i, g in enumerate(groups)],
    }
    if vcs and (always_vcs or draw(st.booleans())):
        unowned = [f"g{i}-{k}" for i, g in enumerate(groups) for k in range(g["count"])]
        entries = []
        for v in range(draw(st.integers(1, 2))):
            entry: dict = {"name": f"vc{v}"}
            owned = (
                draw(st.lists(st.sampled_from(unowned), max_size=3, unique=True)) if unowned else []
            )
            if owned:
                entry["nodes"] = owned
                unowned = [n for n in unowned if n not in owned]
            if not owned or draw(st.booleans()):
                entry["gpus"] = draw(st.integers(1, 8))
            entries.append(entry)
        data["vcs"] = entries
    return dlsched.Cluster.from_dict(data)


def pool_room(hardware: dlsched.Cluster, vc: str | None) -> dict[str, int]:
    """GPU type key → most GPUs one job of `vc` may hold on that type (its VC's own nodes if
    it owns some, else the nodes no VC owns; capped by its quota)."""
    owners = {i: v.name for v in hardware.vcs for i in v.node_indices}
    owning = set(owners.values())
    pool = vc if vc in owning else None
    room: dict[str, int] = {}
    for node in hardware.nodes:
        if owners.get(node.index) == pool:
            room[node.gpu_type] = room.get(node.gpu_type, 0) + len(node.gpu_ids)
    quota = next((v.quota_gpus for v in hardware.vcs if v.name == vc), None)
    if quota is not None:
        room = {t: min(n, quota) for t, n in room.items()}
    return room


def demand_room(hardware: dlsched.Cluster, vc: str | None) -> tuple[int, int]:
    """(milli-CPUs, MiB) that every node a job of `vc` may use holds (0: the cluster declares
    no such resource): a whole-job demand no larger fits any placement on idle nodes, since
    a node's share of a job's demand never exceeds the whole."""
    owners = {i: v.name for v in hardware.vcs for i in v.node_indices}
    pool = vc if vc in set(owners.values()) else None
    nodes = [node for node in hardware.nodes if owners.get(node.index) == pool]
    cpu = mem = 0
    if hardware.declares_cpus:
        cpu = min(round(n.cpus * 1000) if n.cpus is not None else 64_000 for n in nodes)
    if hardware.declares_memory:
        mem = min(round(n.memory_gb * 1024) if n.memory_gb is not None else 1 << 19 for n in nodes)
    return cpu, mem


@st.composite
def workloads(
    draw: st.DrawFn,
    hardware: dlsched.Cluster,
    throughput: str = "duration",
    *,
    max_jobs: int = MAX_JOBS,
    models: bool = False,
    one_gpu: bool = False,
    fractional: bool = False,
    elastic: bool = False,
    deadlines: bool = False,
    users: bool = False,
    vcs: bool = False,
    priorities: bool = False,
    resources: bool = False,
) -> pd.DataFrame:
    """1–`max_jobs` jobs that each fit a GPU pool of `hardware` they may use.

        Optional columns, each only when asked for: `model` (always under `gavel`, whose
        rates need one), `user`, `vc` (from the cluster's VCs, or none), `deadline` (submit +
        0.5–5 × duration, some jobs without), `priority`, elastic `min_gpus`/`max_gpus`, and
        fractional `gpu_milli` on some one-GPU jobs, and `cpu_milli`/`memory_mib` (0 up to what
    every node of the job's pool holds, `demand_room`) when the cluster declares CPU or memory.
    `one_gpu`: every job asks for 1 GPU."""
    n = draw(st.integers(1, max_jobs))
    # A small pool of instants, so that several jobs often arrive together.
    instants = draw(
        st.lists(
            st.one_of(st.integers(0, 500), st.floats(0, 500, allow_nan=False)),
            min_size=1,
            max_size=n,
        )
    )
    vc_names = [None, *(v.name for v in hardware.vcs)] if vcs else [None]
    names = models_for(throughput)
    need_model = models or throughput == "gavel"
    rows: list[dict] = []
    for _ in range(n):
        wanted = draw(st.sampled_from(vc_names))
        # A pool may be empty (a quota-only VC when VCs own every node): take the next.
        vc, room = next(
            (v, r)
            for v in (wanted, None, *(v.name for v in hardware.vcs))
            if (r := pool_room(hardware, v))
        )
        biggest = max(room.values())
        model = draw(st.sampled_from(names)) if need_model else None
        counts = [1] if one_gpu else counts_for(throughput, room, model)
        gpus = draw(st.sampled_from(counts))
        duration = draw(st.one_of(st.integers(1, 1000), st.floats(1, 1000, allow_nan=False)))
        row: dict = {
            "submit_time": draw(st.sampled_from(instants)),
            "num_gpus": gpus,
            "duration": float(duration),
        }
        if need_model:
            row["model"] = model
        if vcs or vc is not None:
            row["vc"] = vc
        if users:
            row["user"] = draw(st.sampled_from(["alice", "bob", "carol"]))
        if deadlines:
            factor = draw(st.one_of(st.none(), st.floats(0.5, 5.0)))
            row["deadline"] = (
                float("nan") if factor is None else row["submit_time"] + (factor * duration)
            )
        if priorities:
            row["priority"] = draw(st.sampled_from([0.5, 1.0, 2.0, 4.0]))
        small = fractional and gpus == 1 and draw(st.booleans())
        if fractional:
            row["gpu_milli"] = draw(st.integers(100, 900)) if small else 1000
        if elastic:
            # A share of one GPU cannot grow to several GPUs (the schema refuses it).
            bounded = not small and draw(st.booleans())
            low = draw(st.integers(1, gpus)) if bounded else gpus
            high = draw(st.integers(gpus, min(8, biggest))) if bounded else gpus
            row["min_gpus"], row["max_gpus"] = float(low), float(high)
        if resources and (hardware.declares_cpus or hardware.declares_memory):
            cpu, mem = demand_room(hardware, vc)
            # Often the most a node holds, so that CPU or memory, not GPUs, binds.
            row["cpu_milli"] = draw(st.one_of(st.just(cpu), st.integers(0, cpu)))
            row["memory_mib"] = draw(st.one_of(st.just(mem), st.integers(0, mem)))
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.insert(0, "job_id", draw(job_ids(n)))
    return frame


def job_ids(n: int) -> st.SearchStrategy[list[object]]:
    """`n` unique job ids, all integers or all short text."""
    return st.one_of(
        st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True),
        st.lists(st.text("abjxyz_", min_size=1, max_size=4), min_size=n, max_size=n, unique=True),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[pd.DataFrame, dlsched.Cluster]:
    """A random cluster and a duration-only workload that fits it."""
    hardware = draw(clusters())
    return draw(workloads(hardware)), hardware
