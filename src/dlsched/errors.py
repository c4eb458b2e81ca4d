"""Error types. Every message names what to fix: the file, the row and the field."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DlschedError(Exception):
    """Base class of every error dlsched raises on purpose."""


class ConfigError(DlschedError, ValueError):
    """A cluster or experiment file is malformed; the message names the file and the key."""


class TraceError(DlschedError, ValueError):
    """A trace row is malformed; the message names the file, the row and the field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.path = path
        self.row = row
        self.field = field
        self.reason = message


class UnknownModelError(DlschedError, KeyError):
    """A throughput model was asked about a (model, GPU type, count) it does not know.

    `field` says which job field is to blame: ``"model"`` or ``"gpu_type"``.
    """

    def __init__(self, message: str, field: str = "model") -> None:
        super().__init__(message)
        self.field = field

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SchedulingError(DlschedError, RuntimeError):
    """A policy returned an impossible allocation (a GPU twice, an unknown job...)."""


class ResultsError(DlschedError, ValueError):
    """A saved result or a file of a results directory is missing or damaged; the message
    names the folder and the file, and what to do."""


class OutputError(DlschedError, ValueError):
    """A path dlsched was asked to write is refused: a symbolic link, an input of the run, or
    one file named for two outputs; the message names the path and what to change."""


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of `choices`, or an empty string."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_keys(where: str, given: Iterable[object], allowed: Iterable[str]) -> None:
    """Raise `ConfigError` naming `where` and each unknown key, with a did-you-mean.

    >>> check_keys("c.yaml, nodes[0]", ["gpus_per_nod"], ["gpu_type", "gpus_per_node"])
    Traceback (most recent call last):
    ...
    dlsched.errors.ConfigError: c.yaml, nodes[0]: unknown key 'gpus_per_nod' (did you mean \
'gpus_per_node'?); allowed: gpu_type, gpus_per_node
    """
    known = sorted(allowed)
    unknown = [key for key in given if key not in known]
    if unknown:
        names = "; ".join(f"unknown key {key!r}{did_you_mean(key, known)}" for key in unknown)
        raise ConfigError(f"{where}: {names}; allowed: {', '.join(known)}")
