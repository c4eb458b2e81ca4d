"""Where the bundled traces and cluster configs are.

In a wheel they sit inside the package (``dlsched/_bundled``); in an editable install or a
source checkout they are the repository's top-level ``traces/`` and ``configs/`` folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def source_checkout() -> Path | None:
    """The repository root when dlsched runs from a source checkout (an editable install, or
    ``src`` on the path), else None: an installed wheel has no repository around it, so
    nothing can be looked for "beside the repository"."""
    if (_PACKAGE / "_bundled").is_dir():
        return None
    root = _PACKAGE.parent.parent  # src/dlsched -> repository root
    return root if (root / "pyproject.toml").is_file() else None


def bundled_root() -> Path:
    """The folder holding ``traces/`` and ``configs/``."""
    inside = _PACKAGE / "_bundled"
    if inside.is_dir():
        return inside
    return _PACKAGE.parent.parent  # src/dlsched -> repository root


def resolve_cluster(path_or_name: str | Path) -> Path:
    """A path as given if it exists, else a bundled cluster config of that name."""
    path = Path(path_or_name)
    if path.exists():
        return path
    candidate = bundled_root() / "configs" / "clusters" / f"{path.name.removesuffix('.yaml')}.yaml"
    if candidate.exists():
        return candidate
    known = sorted(p.stem for p in (bundled_root() / "configs" / "clusters").glob("*.yaml"))
    raise FileNotFoundError(
        f"{path}: no such cluster file, and no bundled cluster of that name "
        f"(bundled: {', '.join(known) or 'none'})"
    )


def bundled_trace(name: str) -> Path:
    """The path of a bundled trace file."""
    return bundled_root() / "traces" / name


DEFAULT_TRACE = "philly_day.csv"
DEFAULT_CLUSTER = "philly"
