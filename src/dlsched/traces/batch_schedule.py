"""The ``batch_schedule`` trace column: a job's batch size by epoch (`dlsched.perf.dynamic`).

``"E1:B1;E2:B2;..."``: ``E_i`` epochs (a finite number > 0) at batch size ``B_i`` (a whole
number > 0), in order; spaces around the parts are allowed, empty parts are not phases.
When the job's ``model`` names its batch size (``"ResNet-18 (batch size 32)"``, Gavel's
job types) the schedule's first batch size must be that one: the trace's throughput is
measured at it. Kept light (no engine imports): `dlsched.traces.schema` validates with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

COLUMN = "batch_schedule"
"""The trace column that carries a job's batch-size schedule."""

_BATCH = re.compile(r"\(batch size (\d+)\)")


@dataclass(frozen=True)
class Phase:
    """`epochs` epochs at `batch_size`."""

    epochs: float
    batch_size: int


def parse_batch_schedule(text: object) -> tuple[Phase, ...]:
    """The phases of a ``batch_schedule`` text; a `ValueError` naming the column and the
    part that is wrong otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{COLUMN} must be a text 'epochs:batch_size;...', got {text!r}")
    phases = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        epochs_text, sep, bs_text = part.partition(":")
        if not sep:
            raise ValueError(f"{COLUMN}: phase {part!r} is not 'epochs:batch_size'")
        try:
            epochs = float(epochs_text)
            bs_value = float(bs_text)
        except ValueError:
            raise ValueError(
                f"{COLUMN}: phase {part!r} is not 'epochs:batch_size' of two numbers"
            ) from None
        if not 0 < epochs < math.inf:
            raise ValueError(f"{COLUMN}: phase {part!r} must have a finite number of epochs > 0")
        if not (0 < bs_value < 2**31 and bs_value == int(bs_value)):
            raise ValueError(f"{COLUMN}: phase {part!r} must have a whole batch size > 0")
        phases.append(Phase(epochs, int(bs_value)))
    if not phases:
        raise ValueError(f"{COLUMN} has no phase: {text!r}")
    return tuple(phases)


def format_batch_schedule(phases: Sequence[Phase]) -> str:
    """The ``batch_schedule`` text of `phases`, adjacent phases of one batch size merged."""
    merged: list[list[float]] = []
    for phase in phases:
        if merged and merged[-1][1] == phase.batch_size:
            merged[-1][0] += phase.epochs
        else:
            merged.append([phase.epochs, phase.batch_size])
    return ";".join(f"{epochs:g}:{int(bs)}" for epochs, bs in merged)


def phase_model(model: str | None, batch_size: int) -> str | None:
    """`model` renamed to `batch_size` (``"X (batch size 32)"`` → ``"X (batch size 64)"``),
    or None when its name carries no batch size."""
    if model is None or _BATCH.search(model) is None:
        return None
    return _BATCH.sub(f"(batch size {batch_size})", model)


def traced_batch_size(model: str | None) -> int | None:
    """The batch size a model name carries (``"X (batch size 32)"`` → 32), else None."""
    match = None if model is None else _BATCH.search(model)
    return None if match is None else int(match[1])


def schedule_problem(text: object, model: object) -> str | None:
    """Why `text` is not a valid ``batch_schedule`` for a job of `model`, or None (also for
    a missing value: a job without a schedule)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return None
    try:
        phases = parse_batch_schedule(text)
    except ValueError as exc:
        return str(exc)
    traced = traced_batch_size(model) if isinstance(model, str) else None
    if traced is not None and phases[0].batch_size != traced:
        return (
            f"{COLUMN} starts at batch size {phases[0].batch_size}, but the job's model "
            f"{model!r} is measured at batch size {traced}"
        )
    return None
