"""Tiresias simulator job CSV (SymbioticLab/Tiresias, ``simulator/*.csv``; Gu et al., NSDI '19).

Header ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``. ``duration``
is the run time in seconds at full speed; ``iterations`` (unused by Tiresias' schedulers)
and ``interval`` (gap to the next submission) are kept as passthrough columns.
"""

from __future__ import annotations

import os
from typing import Any

from dlsched.errors import TraceError
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "tiresias"
RENAMES = {"num_gpu": "num_gpus", "model_name": "model"}
"""Tiresias column → canonical column; the others already have canonical names."""


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Tiresias job CSV; errors name the Tiresias field (``num_gpu``, not ``num_gpus``)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    df = read_csv_frame(path, text_columns=("job_id", "model_name"), skipped=skipped)
    for theirs, ours in RENAMES.items():
        if theirs in df.columns and ours in df.columns:
            raise TraceError(
                f"has both {theirs!r} and {ours!r}; a {FORMAT} trace has only {theirs!r}",
                path=str(path),
                field=ours,
            )
    df = df.rename(columns=RENAMES)
    field_names = {ours: theirs for theirs, ours in RENAMES.items()}
    return validate_jobs(
        df, path, lenient=lenient, fmt=FORMAT, field_names=field_names, skipped=skipped or ()
    )
