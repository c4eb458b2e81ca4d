"""The raw Microsoft Philly job log, ``cluster_job_log`` (msr-fiddle/philly-traces).

Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
Workloads", USENIX ATC '19; trace licence CC BY 4.0. The file is JSON: a list of jobs
(a file of one job object after another, as JSON Lines, is read too), each

``{"status": "Pass"|"Killed"|"Failed", "vc": <hash>, "jobid": "application_…",
"attempts": [{"start_time": …, "end_time": …, "detail": [{"ip": "m47", "gpus": ["gpu0", …]}]}],
"submitted_time": "2017-10-07 01:11:39", "user": <hash>}``.

The official definitions (the repository's analysis notebook) are followed:

- GPUs = the GPUs of the first attempt, summed over its machines;
- queueing delay = first attempt's ``start_time`` − ``submitted_time``;
- run time = last attempt's ``end_time`` − first attempt's ``start_time`` (so it includes
  the gaps between attempts);
- a job with no attempt, a first attempt without ``start_time``, or a last attempt
  without ``end_time`` (still running when the log was taken) has no run time: such jobs
  are *excluded* (counted by reason in ``provenance["excluded"]``), as are jobs whose first
  attempt lists no GPU and jobs with a zero run time.

Columns: ``job_id`` = ``jobid``; ``submit_time`` = seconds since the earliest
``submitted_time`` (``provenance["time_origin"]``; the log states no time zone);
``num_gpus``; ``duration`` = run time; ``vc``, ``user``; ``status`` kept as written.
Passthrough: ``queueing_delay`` (s, as traced) and ``attempts`` (number of attempts).
``source_row`` is the job's 1-based position in the list (JSON has no useful lines).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.parsing import rebase, seconds_between, times
from dlsched.traces.reading import read_text
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "philly"

NO_ATTEMPT = "no scheduling attempt recorded (no run time)"
NO_START = "first attempt has no start_time (no run time)"
STILL_RUNNING = "still running when the log was taken (last attempt has no end_time)"
NO_GPUS = "first attempt lists no GPU"
ZERO_RUN = "zero run time"

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NONE = (None, "", "None", "none", "null")


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Philly ``cluster_job_log`` (JSON list of jobs, or one job object per line)."""
    path = str(path)
    fields: dict[str, list[Any]] = {
        k: []
        for k in (
            "jobid",
            "submitted_time",
            "first_start",
            "last_end",
            "num_gpus",
            "attempts",
            "vc",
            "user",
            "status",
        )
    }
    problems: dict[tuple[str, str], list[int]] = {}
    excluded: dict[str, list[int]] = {}
    n = 0
    for n, job in enumerate(_jobs(read_text(path), path), start=1):
        problem, exclusion = _fields(job, fields)
        if problem is not None:
            problems.setdefault(problem, []).append(n - 1)
        elif exclusion is not None:
            excluded.setdefault(exclusion, []).append(n - 1)

    table = pd.DataFrame(fields)
    checks = [RowCheck(field, reason, _mask(n, at)) for (field, reason), at in problems.items()]
    submitted = times(table, "submitted_time", checks)
    first_start = times(
        table.rename(columns={"first_start": "attempts[0].start_time"}),
        "attempts[0].start_time",
        checks,
    )
    last_end = times(
        table.rename(columns={"last_end": "attempts[-1].end_time"}), "attempts[-1].end_time", checks
    )
    run_time = seconds_between(last_end, first_start)
    checks.append(
        RowCheck(
            "attempts[-1].end_time",
            "the last attempt ends before the first one starts (negative run time)",
            run_time < 0,
            table["last_end"],
        )
    )
    zero = np.zeros(n, dtype=bool)
    zero[np.flatnonzero(run_time == 0)] = True
    exclusions = [RowCheck("attempts", reason, _mask(n, at)) for reason, at in excluded.items()]
    exclusions.append(RowCheck("attempts", ZERO_RUN, zero))

    submit, origin = rebase(submitted)
    frame = pd.DataFrame(
        {
            "job_id": table["jobid"],
            "submit_time": submit,
            "num_gpus": table["num_gpus"],
            "duration": run_time,
            "vc": table["vc"],
            "user": table["user"],
            "status": table["status"],
            "queueing_delay": seconds_between(first_start, submitted),
            "attempts": table["attempts"],
            "source_row": np.arange(1, n + 1, dtype=np.int64),
        }
    )
    workload = validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        field_names={
            "job_id": "jobid",
            "submit_time": "submitted_time",
            "num_gpus": "attempts[0].detail",
            "duration": "attempts",
        },
        extra_checks=checks,
        exclusions=exclusions,
    )
    workload.provenance["time_origin"] = origin
    return workload


def _mask(n: int, at: list[int]) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[at] = True
    return mask


def _skip_whitespace(text: str, at: int) -> int:
    """The index of the first non-whitespace character at or after `at` (len(text) if none)."""
    match = _WHITESPACE.match(text, at)
    return at if match is None else match.end()  # never None: the pattern matches ""


def _jobs(text: str, path: str) -> Iterator[Any]:
    """The job objects of a JSON list (or of a stream of objects), one at a time."""
    decoder = json.JSONDecoder()
    at = _skip_whitespace(text, 0)
    if at == len(text):
        raise TraceError("the file is empty (no JSON)", path=path)
    in_list = text[at] == "["
    if in_list:
        at = _skip_whitespace(text, at + 1)
    position = 0
    while at < len(text):
        if in_list and text[at] == "]":
            rest = _skip_whitespace(text, at + 1)
            if rest != len(text):
                _fail(path, text, rest, position + 1, "text after the end of the job list")
            return
        position += 1
        try:
            job, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            _fail(path, text, exc.pos, position, f"malformed JSON ({exc.msg})")
        yield job
        at = _skip_whitespace(text, at)
        if in_list:
            if at < len(text) and text[at] == ",":
                at = _skip_whitespace(text, at + 1)
            elif at >= len(text) or text[at] != "]":
                _fail(path, text, at, position, "expected ',' or ']' after a job")
    if in_list:
        _fail(path, text, at, position, "the job list is not closed with ']'")


def _fail(path: str, text: str, pos: int, position: int, reason: str) -> None:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    raise TraceError(
        f"{reason} at line {line}, column {column} (job #{position})", path=path, row=position
    )


def _fields(job: Any, out: dict[str, list[Any]]) -> tuple[tuple[str, str] | None, str | None]:
    """Append one job's raw fields to ``out``; return (problem, exclusion)."""
    values: dict[str, Any] = {k: None for k in out}
    problem: tuple[str, str] | None = None
    exclusion: str | None = None
    if not isinstance(job, dict):
        problem = ("job", f"a job must be a JSON object, got {type(job).__name__}")
    else:
        for key in ("jobid", "vc", "user", "status"):
            value = job.get(key)
            values[key] = None if value in _NONE else str(value)
        values["submitted_time"] = _text(job.get("submitted_time"))
        attempts = job.get("attempts")
        if "attempts" not in job:
            problem = ("attempts", "attempts is missing")
        elif not isinstance(attempts, list):
            problem = ("attempts", "attempts must be a list")
        elif not attempts:
            exclusion = NO_ATTEMPT
            values["attempts"] = 0
        elif not all(isinstance(a, dict) for a in attempts):
            problem = ("attempts", "each attempt must be an object")
        else:
            values["attempts"] = len(attempts)
            values["first_start"] = _text(attempts[0].get("start_time"))
            values["last_end"] = _text(attempts[-1].get("end_time"))
            gpus, problem = _gpus(attempts[0])
            values["num_gpus"] = gpus
            if problem is None:
                if values["first_start"] is None:
                    exclusion = NO_START
                elif values["last_end"] is None:
                    exclusion = STILL_RUNNING
                elif gpus == 0:
                    exclusion = NO_GPUS
    for key, value in values.items():
        out[key].append(value)
    return problem, exclusion


def _gpus(attempt: dict) -> tuple[int, tuple[str, str] | None]:
    detail = attempt.get("detail")
    if detail is None:
        return 0, None
    if not isinstance(detail, list):
        return 0, ("attempts[0].detail", "detail must be a list of {ip, gpus}")
    total = 0
    for machine in detail:
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            return 0, ("attempts[0].detail", "each machine in detail needs a 'gpus' list")
        total += len(gpus)
    return total, None


def _text(value: Any) -> str | None:
    return None if value in _NONE else str(value)
