"""Admission control: what a policy decides about a job at the door.

A policy may define ``admit(job, view) -> Admission``; the engine calls it once per job, at
its submit instant, after the jobs submitted before it at that instant have been admitted and
before the policy's `on_arrival` (see `dlsched.policies.base`). The answer is one of

- ``Admission.accept(reason)``: the job is queued as it was submitted (today's behaviour, and
  what a policy without the hook gets for every job);
- ``Admission.best_effort(reason)``: the job is queued and runs, but without its deadline —
  the policy sees its spec with ``deadline=None`` from then on, so deadline-aware code treats
  it as best-effort (ElasticFlow, Chronus and Hydra run such jobs beside deadline jobs); the
  result keeps its submitted deadline, against which the metrics judge it;
- ``Admission.decline(reason)``: the job never runs. It is logged (a ``decline`` event after its
  ``submit``), never queued, never handed to `on_arrival` or `schedule`, and reported with
  status ``declined`` (counted in ``jobs_total`` and ``jobs_declined``, not in the JCTs).

The reason is free text kept in the jobs table (``admission_reason``) and should say why, e.g.
"needs 3 GPUs for 1200 s to meet its deadline, 1 free". The decision goes into the event log
as ``admit``, ``best_effort`` or ``decline`` and into the jobs table as ``admission``; a run
whose policy has no hook has neither (its tables are unchanged, byte for byte).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlsched.errors import SchedulingError

if TYPE_CHECKING:
    from dlsched.engine.view import ClusterView
    from dlsched.jobs import JobState

ACCEPT = "accept"
BEST_EFFORT = "best_effort"
DECLINE = "decline"
#: The decisions, in the order of their codes in the jobs table.
DECISIONS = (ACCEPT, BEST_EFFORT, DECLINE)

#: The status of a declined job in `result.jobs` (beside finished / unfinished / unschedulable).
DECLINED = "declined"


@dataclass(frozen=True, slots=True)
class Admission:
    """A policy's decision about one arriving job: `decision` is one of `DECISIONS`."""

    decision: str
    reason: str = ""

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise SchedulingError(
                f"admission decision {self.decision!r} is not one of {', '.join(DECISIONS)}: "
                "return Admission.accept(), Admission.best_effort() or Admission.decline()"
            )
        if not isinstance(self.reason, str):
            raise SchedulingError(
                f"admission reason {self.reason!r} is a {type(self.reason).__name__}, "
                "not a string: give the reason as text"
            )

    @classmethod
    def accept(cls, reason: str = "") -> Admission:
        """Queue the job as submitted."""
        return cls(ACCEPT, reason)

    @classmethod
    def best_effort(cls, reason: str = "") -> Admission:
        """Queue the job without its deadline."""
        return cls(BEST_EFFORT, reason)

    @classmethod
    def decline(cls, reason: str = "") -> Admission:
        """Refuse the job: it never runs."""
        return cls(DECLINE, reason)


AdmitHook = Callable[["JobState", "ClusterView"], Admission]


def admission_hook(policy: object) -> AdmitHook | None:
    """The policy's `admit` method, or None when it has none (every job is accepted, and
    nothing of admission appears in the result)."""
    admit = getattr(policy, "admit", None)
    return admit if callable(admit) else None


def checked(answer: object, policy: object, job: JobState) -> Admission:
    """`answer` as an `Admission`, or a `SchedulingError` naming the policy and the job."""
    if isinstance(answer, Admission):
        return answer
    name = getattr(policy, "name", type(policy).__name__)
    raise SchedulingError(
        f"policy {name!r}: admit({job.job_id!r}) returned {answer!r}, not an Admission: "
        "return Admission.accept(), Admission.best_effort() or Admission.decline()"
    )
