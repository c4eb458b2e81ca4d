"""Overheads: time during which a job holds its GPUs and makes no progress.

Defaults follow the core semantics: a job's first start costs nothing, a restart after
preemption costs `restart_s`, a move to other GPUs costs `migration_s` (the restart cost when
not given). Named presets per paper come with the policies that need them.
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
