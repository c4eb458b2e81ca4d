"""The one YAML loader of dlsched: every cluster file, experiment file and ``--param`` value
is read through it, so that a YAML file someone shared is data, bounded in size and time.

What it refuses, each as a `ConfigError` naming the file (and the line, or key, where known):

- anything but a regular file (a directory, ``/dev/zero``, a FIFO, a socket): it is checked
  with `os.stat` before it is opened, so a FIFO never blocks the reader;
- a file larger than `MAX_BYTES` (16 MiB: the largest bundled config is a few KiB); at most
  ``MAX_BYTES + 1`` bytes are ever read, so a file that grows while read is refused too;
- a document whose aliases expand it beyond `MAX_NODES` nodes, or refer to themselves.
  Aliases are *bounded*, not refused: anchors and merge keys (``<<: *common``) are ordinary
  YAML that a hand-written sweep may use, and what makes a "billion laughs" document
  dangerous is only the size it expands to. PyYAML shares the object an alias names, so the
  loader itself stays small, but dlsched walks values (canonical JSON, run keys, validation)
  and would expand every reference; the expanded size is counted on the composed node graph
  (memoised, so counting is linear in the file) before any object is built;
- a key given twice in one mapping (plain YAML keeps the last one silently);
- every tag outside YAML's safe schema (``!!python/object`` ...), as `yaml.SafeLoader` does;
- a document nested too deeply for the parser (libyaml stops at 1,000 levels; the
  pure-Python parser, used where libyaml is missing, recurses once per level).

Numbers are read as YAML 1.2 reads them, on top of YAML 1.1's forms: ``1e8``, ``1.5e3``,
``-2E-3``, ``.5`` are floats (YAML 1.1 reads them as strings), and so are ``.inf``,
``-.inf``, ``.nan`` and, because ``starve_s=inf`` is what people type, bare ``inf``,
``-inf`` and ``nan`` (quote them for the text). Whether a non-finite number is acceptable is
the validation's business (`dlsched.registry.check_arguments`), not the loader's.

>>> load_text("a: 1e8\\nb: [inf, -.inf]", "<doc>")
{'a': 100000000.0, 'b': [inf, -inf]}
>>> load_text("a: 1\\na: 2", "<doc>")
Traceback (most recent call last):
...
dlsched.errors.ConfigError: <doc>: key 'a' is given twice in one mapping (lines 1 and 2); keep one
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from dlsched.errors import ConfigError

MAX_BYTES = 16 * 1024 * 1024
"""The largest YAML file dlsched reads, in bytes (16 MiB)."""

MAX_NODES = 1_000_000
"""The most nodes (scalars, sequences, mappings) a document may expand to through its
aliases: far more than any config writes out, far less than a YAML bomb asks for."""

# YAML 1.2's core-schema floats that YAML 1.1 reads as strings, and bare inf/nan.
_FLOAT_12 = re.compile(
    r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:inf|Inf|INF|\.inf|\.Inf|\.INF)
        |nan|NaN|NAN|\.nan|\.NaN|\.NAN)$""",
    re.VERBOSE,
)


class YamlProblem(yaml.YAMLError):
    """A document the loader refuses although PyYAML would read it (said in `message`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Checks:
    """What dlsched's loaders add to a safe PyYAML loader: duplicate keys refused, alias
    expansion bounded (see the module docstring)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)  # type: ignore[call-arg]
        # An alias is written `*name`: a text without "*" has none, and needs no count.
        self._may_alias = not isinstance(stream, str) or "*" in stream

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        if self._may_alias:
            _check_expansion(node)  # on the node graph, before any object is built
        return self.construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` merges a mapping in (its keys may be overridden here)
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first_line:
                    raise YamlProblem(
                        f"key {key!r} is given twice in one mapping (lines {first_line[key]} "
                        f"and {line}); keep one"
                    )
                first_line[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                continue
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]

    # provided by the PyYAML loader this is mixed into
    get_single_node: Any
    construct_document: Any
    construct_object: Any


class PurePythonLoader(_Checks, yaml.SafeLoader):
    """dlsched's loader on PyYAML's pure-Python parser: `Loader` where libyaml is missing."""


# libyaml's parser where PyYAML has it (about five times faster than the pure-Python one: a
# MiB of YAML in seconds, not tens of seconds); constructing stays PyYAML's safe constructor.
Loader: type = PurePythonLoader
if hasattr(yaml, "CSafeLoader"):

    class Loader(_Checks, yaml.CSafeLoader):  # type: ignore[no-redef]
        """dlsched's loader on libyaml's parser (see the module docstring)."""


for _loader in {Loader, PurePythonLoader}:
    _loader.add_implicit_resolver(  # type: ignore[attr-defined]
        "tag:yaml.org,2002:float", _FLOAT_12, list("-+.0123456789iInN")
    )


def _check_expansion(root: yaml.Node) -> None:
    """Raise `YamlProblem` if `root` expands to more than `MAX_NODES` nodes, or holds itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, where: str) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in open_nodes:
            raise YamlProblem(
                f"{_at(node)}{f'key {where!r}' if where else 'the document'} refers to itself "
                "through an alias; "
                "write the value out"
            )
        total = 1
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            open_nodes.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    total += size(item, f"{where}[{i}]")
                    _cap(total, node, where)
            else:
                for key_node, value_node in node.value:
                    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                    total += size(key_node, where) + size(
                        value_node, f"{where}.{key}" if where else str(key)
                    )
                    _cap(total, node, where)
            open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    size(root, "")


def _cap(total: int, node: yaml.Node, where: str) -> None:
    if total > MAX_NODES:
        raise YamlProblem(
            f"{_at(node)}{f'key {where!r}' if where else 'the document'} expands through "
            f"aliases to more than {MAX_NODES:,} values (a YAML bomb?); write it without "
            "nested aliases"
        )


def _at(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}: "


def problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and, where known, at which line and column."""
    if isinstance(exc, YamlProblem):
        return exc.message
    if isinstance(exc, yaml.MarkedYAMLError):
        what = exc.problem or exc.context or "malformed"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return (
                f"{' '.join(str(what).split())} at line {mark.line + 1}, column {mark.column + 1}"
            )
        return " ".join(str(what).split())
    return " ".join(str(exc).split())


def loads(text: str, loader: type | None = None) -> Any:
    """The value of YAML `text`, or a `yaml.YAMLError` (`YamlProblem` for what this loader
    refuses beyond PyYAML); for callers that word their own errors, as ``--param`` does.
    `loader`: `Loader` (the default) or `PurePythonLoader`."""
    try:
        return yaml.load(text, Loader=loader or Loader)  # noqa: S506 (a safe loader)
    except RecursionError:
        raise YamlProblem(
            "nested too deeply to read as YAML; a config is a few levels deep"
        ) from None


def load_text(text: str, source: str) -> Any:
    """The value of YAML `text`; `source` (a file name) starts every error.

    A `ConfigError` for what the loader refuses: ``<source>: not valid YAML: ...`` for
    malformed YAML or an unsafe tag, ``<source>: <what>`` for a duplicate key, an alias
    bomb or a document nested too deeply.
    """
    try:
        return loads(text)
    except YamlProblem as exc:
        raise ConfigError(f"{source}: {exc.message}") from None
    except yaml.constructor.ConstructorError as exc:
        raise ConfigError(
            f"{source}: not valid YAML: {problem(exc)}; a config holds plain values only "
            "(no tags such as !!python/object)"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {problem(exc)}; fix the syntax") from None


def _read_at_most(handle: Any, limit: int, chunk: int = 1 << 16) -> bytes:
    """At most `limit` bytes of `handle`, read in chunks: ``read(limit)`` would allocate a
    `limit`-byte buffer for every file, however small."""
    parts: list[bytes] = []
    left = limit
    while left > 0:
        part = handle.read(min(chunk, left))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], what: str = "YAML file") -> str:
    """The text of YAML file `path`: a regular file of at most `MAX_BYTES`, UTF-8.

    `what` names the file's role in errors (``"cluster file"``). Never blocks on a FIFO and
    never reads more than ``MAX_BYTES + 1`` bytes.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such {what}; check the path") from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the {what} ({exc.strerror or exc}); check the path"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"{path}: the {what} is {_kind(info.st_mode)}, not a regular file; name a YAML file"
        )
    if info.st_size > MAX_BYTES:
        raise ConfigError(_too_large(path, what, f"{info.st_size:,} bytes"))
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the stat, open still returns
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ConfigError(f"{path}: the {what} is not a regular file; name a YAML file")
            raw = _read_at_most(handle, MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the {what} ({exc.strerror or exc}); check the path"
        ) from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(_too_large(path, what, "it grew while read"))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a UTF-8 text file (byte {raw[exc.start]:#04x} at offset "
            f"{exc.start}); a {what} is YAML text"
        ) from None


def load_file(path: str | os.PathLike[str], what: str = "YAML file") -> Any:
    """The value of YAML file `path`, read by `read_text` and parsed by `load_text`."""
    return load_text(read_text(path, what), str(path))


def _too_large(path: Path, what: str, size: str) -> str:
    return (
        f"{path}: the {what} is larger than the cap of {MAX_BYTES:,} bytes "
        f"({MAX_BYTES / 2**20:g} MiB): {size}; a config file is small text: is this the "
        "right file?"
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
