"""Writes that stay in their place: the primitives every file dlsched writes goes through.

- A file appears whole or not at all (`atomic_file` and the helpers on it): it is written
  into a temporary file of the same folder, created with ``O_EXCL | O_NOFOLLOW`` (so nothing
  planted under that name is followed or reused), flushed and fsync'd, then moved onto its
  name by one ``os.replace``. On any error — a full disk (ENOSPC) midway, an exception of the
  code writing it, Ctrl-C — the temporary file is removed and what the name held before stays
  as it was; a reader never sees a truncated file under the final name.
- A target that is a symbolic link is refused (`check_target`), not followed or replaced:
  a link planted in an output folder (``R/timeline.parquet -> ~/.bashrc``) says that
  someone expects a write to land elsewhere. Folders on the way may be links (a results
  folder on scratch space is a common, deliberate one); only the file's own name is checked.
- A target that is one of the run's inputs (the trace, the cluster file) is refused:
  compared by (device, inode) where both exist, so another spelling of the same file
  (``./t.csv``, a hard link, a path through a linked folder) is caught too.
- A file that must be opened in place (the results store's ``.lock``, held with ``flock``
  while its content changes) is opened by `open_in_place`: ``O_NOFOLLOW | O_CREAT`` without
  ``O_TRUNC``, and refused unless it is a regular file, so a planted link or FIFO is never
  truncated, written through or waited on.
- A set of files that only mean something together (a saved `SimulationResult`) is written
  by `staged_files`: all of them into a private temporary folder inside the target folder,
  then moved onto their names with the *marker* file last (``meta.json`` for a result); the
  old marker goes first, so a folder interrupted between the moves has no marker and reads
  as unfinished, never as a mix of two saves.

Temporary names start with ``.tmp-`` (what the results store's `clean_partial` removes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from dlsched.errors import OutputError

TMP_PREFIX = ".tmp-"
"""How every temporary name starts (hidden; a leftover is known for what it is)."""

PathLike = str | os.PathLike[str]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # (not on Windows: the `islink` checks remain)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def input_files(*sources: object) -> list[str]:
    """The `sources` that name files (a run's trace and cluster file), leaving out what is
    not a path: None, ``<DataFrame>``, ``<dict>``."""
    return [s for s in sources if isinstance(s, str) and s and not s.startswith("<")]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether paths `a` and `b` name one file: by (device, inode) where both exist, else
    by their resolved paths (a file about to be created is the same as an input only if the
    input is that path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_target(path: PathLike, inputs: Iterable[PathLike | None] = (), what: str = "") -> Path:
    """Refuse to write `path` if its name is a symbolic link, a folder, or one of `inputs`
    (None entries are skipped); return it as a `Path`. `what` names the option or argument
    that gave the path (``"--out"``), for the message."""
    target = Path(path)
    named = f"{what} {os.fspath(path)}" if what else os.fspath(path)
    if target.is_symlink():
        raise OutputError(
            f"{named}: is a symbolic link (to {os.readlink(target)}); dlsched does not write "
            "through links: remove the link or give another path"
        )
    if target.is_dir():
        raise OutputError(f"{named}: is a folder; give the path of a file to write")
    for source in inputs:
        if source is not None and same_file(target, source):
            raise OutputError(
                f"{named}: is {os.fspath(source)}, an input of this run, which writing it "
                "would overwrite; give another path"
            )
    return target


def _create_temporary(folder: Path, name: str) -> tuple[int, Path]:
    """A new, empty file ``.tmp-<name>-<random>`` in `folder`, opened for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for _ in range(100):
        temporary = folder / f"{TMP_PREFIX}{name}-{secrets.token_hex(4)}"
        try:
            # 0o666 before the umask, as a plain open() would give the final file
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", os.fspath(folder))


def fsync_path(path: PathLike) -> None:
    """Flush a file, or a folder's renames, to disk (best effort: not every system opens
    folders)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(
    path: PathLike, inputs: Iterable[PathLike | None] = (), what: str = ""
) -> Iterator[IO[bytes]]:
    """Write the file `path` whole or not at all: yields a binary file to write into.

    When the block ends normally the data is flushed, fsync'd and moved onto `path`; when it
    raises, the temporary file is removed, `path` keeps what it held and the error goes on.
    `inputs` and `what` are `check_target`'s (checked before writing and again at the move).
    """
    inputs = list(inputs)  # (checked twice: an iterator would be spent by the first)
    target = check_target(path, inputs, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _create_temporary(target.parent, target.name)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        check_target(target, inputs, what)  # (a link planted while the data was written)
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        _name_the_target(exc, target)
        raise
    fsync_path(target.parent)


def _name_the_target(exc: BaseException, target: Path, stage: Path | None = None) -> None:
    """Raise a writer's OSError that names no file (pyarrow's "Error writing bytes"), or a
    temporary one of `stage`, again as one naming `target` (or its file of that name) and
    saying that it was left as it was; return otherwise."""
    if not isinstance(exc, OSError) or not exc.errno:
        return
    if exc.filename is not None:
        if stage is None or not os.fspath(exc.filename).startswith(os.fspath(stage)):
            return
        target = target / Path(exc.filename).name
    why = f"{os.strerror(exc.errno)}; left as it was"
    raise OSError(exc.errno, why, os.fspath(target)) from exc


def write_bytes(
    path: PathLike, data: bytes, inputs: Iterable[PathLike | None] = (), what: str = ""
) -> Path:
    """Write `data` to `path` atomically (`atomic_file`); return the path."""
    with atomic_file(path, inputs, what) as handle:
        handle.write(data)
    return Path(path)


def write_text(
    path: PathLike, text: str, inputs: Iterable[PathLike | None] = (), what: str = ""
) -> Path:
    """Write `text` (UTF-8) to `path` atomically (`atomic_file`); return the path."""
    return write_bytes(path, text.encode("utf-8"), inputs, what)


def write_parquet(
    path: PathLike, frame: Any, inputs: Iterable[PathLike | None] = (), what: str = ""
) -> Path:
    """Write a pandas DataFrame (without its index) or a pyarrow Table as one parquet file,
    atomically; return the path."""
    with atomic_file(path, inputs, what) as handle:
        if hasattr(frame, "to_parquet"):
            frame.to_parquet(handle, index=False)
        else:
            import pyarrow.parquet as pq

            pq.write_table(frame, handle)
    return Path(path)


_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}


def write_csv(
    path: PathLike, frame: Any, inputs: Iterable[PathLike | None] = (), what: str = ""
) -> Path:
    """Write a pandas DataFrame (without its index) as CSV, atomically, compressed as its
    name says (``.gz`` …, as `pandas.DataFrame.to_csv` infers from a name); return the path."""
    compression = _COMPRESSION.get(Path(path).suffix.lower())
    with atomic_file(path, inputs, what) as handle:
        frame.to_csv(handle, index=False, compression=compression)
    return Path(path)


def save_figure(figure: Any, path: PathLike, **options: Any) -> Path:
    """`figure.savefig` (matplotlib) onto `path` atomically, in the format `options` name
    (``format=``) or else the one its suffix names."""
    options.setdefault("format", Path(path).suffix.lstrip(".").lower() or "png")
    with atomic_file(path) as handle:
        figure.savefig(handle, **options)
    return Path(path)


def open_in_place(path: PathLike, what: str = "") -> IO[str]:
    """Open (creating it if needed) a regular file to read and write in place, never through
    a symbolic link and never truncating it: for a lock file whose content changes while it
    is held. A link, a FIFO or any other non-regular file under that name is refused."""
    named = f"{what} {os.fspath(path)}" if what else os.fspath(path)
    flags = os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
    if not _NOFOLLOW and Path(path).is_symlink():
        raise OutputError(f"{named}: is a symbolic link; remove it (dlsched made no link there)")
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(
                f"{named}: is a symbolic link; dlsched does not write through links: "
                "remove it (dlsched made no link there)"
            ) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(f"{named}: is not a regular file; remove it")
        # O_NONBLOCK only kept a FIFO from blocking the open; reads and writes of a regular
        # file ignore it, but clear it all the same
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "r+")
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def staged_files(
    folder: PathLike,
    names: Sequence[str],
    marker: str,
    inputs: Iterable[PathLike | None] = (),
    what: str = "",
) -> Iterator[Path]:
    """Write the files `names` of `folder` together: yields a private temporary folder (inside
    `folder`, so on its file system) to write each of them into, by name.

    When the block ends normally every file is fsync'd and moved onto its name, the old
    `marker` removed first and the new one moved last (the marker says that a set is whole).
    When it raises — a full disk while writing — the temporary folder is removed and `folder`
    is untouched. Every target is checked (`check_target`) before and again at the move; a
    name not written in the block is left as it is.
    """
    root = Path(folder)
    inputs = list(inputs)
    for name in names:
        check_target(root / name, inputs, what)
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}save-", dir=root))  # mode 0o700
    try:
        yield stage
        written = [name for name in names if (stage / name).is_file()]
        for name in written:
            _fsync_file(stage / name)
        for name in names:
            check_target(root / name, inputs, what)
        if written:  # un-commit the old set before any of its files changes
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / marker)
        for name in sorted(written, key=lambda n: n == marker):  # the marker last
            os.replace(stage / name, root / name)
        fsync_path(root)
    except BaseException as exc:
        _name_the_target(exc, root, stage)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
