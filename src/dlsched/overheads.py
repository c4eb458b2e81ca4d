"""Overheads: time during which a job holds its GPUs and makes no progress.

Defaults follow the core semantics: a job's first start costs nothing, a restart after
preemption costs `restart_s`, a move to other GPUs costs `migration_s` (the restart cost when
not given). `OverheadModel.preset(name)` gives the named settings in `PRESETS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.jobs import JobSpec


@dataclass(frozen=True)
class OverheadModel:
    """Seconds of no progress charged on (re)starts and moves."""

    restart_s: float = 0.0
    migration_s: float | None = None
    first_start_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("restart_s", "migration_s", "first_start_s"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"overhead {name} must be >= 0 seconds, got {value!r}")

    def first_start(self, job: JobSpec) -> float:
        """Cost of a job's very first start."""
        return self.first_start_s

    def restart(self, job: JobSpec) -> float:
        """Cost of resuming after a preemption (checkpoint restore)."""
        return self.restart_s

    def migration(self, job: JobSpec) -> float:
        """Cost of moving a running job to other GPUs."""
        return self.restart_s if self.migration_s is None else self.migration_s


PRESETS: dict[str, OverheadModel] = {
    # The Tiresias authors' simulator charges nothing for preemption or placement.
    "tiresias-sim": OverheadModel(),
    "none": OverheadModel(),
    # Pollux (Qiao et al., OSDI 2021) charges a flat 30 s to restart or re-scale a job
    # (the figure the issue tracker records for its simulator).
    "pollux": OverheadModel(restart_s=30.0, migration_s=30.0),
    # Gandiva (Xiao et al., OSDI 2018, §4): framework-level suspend/resume "about a second",
    # migration "a few seconds" with its optimised checkpointing; the exact constants are
    # not re-verified (../shared/notes/policies.md §3.3), so these are labelled defaults.
    "gandiva": OverheadModel(restart_s=1.0, migration_s=4.0),
}


def make_overheads(spec: OverheadModel | str | None, restart_s: float = 0.0) -> OverheadModel:
    """An overhead model: as given, a preset name, or (None) a flat restart cost."""
    if isinstance(spec, OverheadModel):
        return spec
    if spec is None:
        return OverheadModel(restart_s=restart_s)
    try:
        return PRESETS[spec]
    except KeyError:
        raise ValueError(f"unknown overhead preset {spec!r}; presets: "
                         f"{', '.join(sorted(PRESETS))}") from None
