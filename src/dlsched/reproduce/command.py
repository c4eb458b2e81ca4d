"""The `dlsched reproduce` command (the parser's options are in `dlsched.cli`)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from dlsched.errors import DlschedError
from dlsched.reproduce import REPRODUCTIONS, shared_folder
from dlsched.reproduce.base import Reproduction
from dlsched.reproduce.runner import run_reproduction

DEFAULT_ROOT = Path("results") / "reproduce"
"""Where `dlsched reproduce NAME` writes without ``--out``: ``results/reproduce/NAME``."""

_WIDTH = 100


class ReproduceUsageError(DlschedError):
    """`dlsched reproduce` was given options that do not go together."""


def list_reproductions(write: Callable[[str], None] = print) -> None:
    """Every registered reproduction: its source, data files, quick subset and cost."""
    for name in REPRODUCTIONS.names():
        repro = REPRODUCTIONS.get(name)
        write(f"{name}  {repro.paper}")
        lines = [
            f"source: {repro.source}",
            "data: " + "; ".join(f"../shared/{d.path} ({d.what})" for d in repro.data),
            f"cost: --quick {repro.cost_quick} ({repro.quick_subset}); full {repro.cost_full}",
        ]
        for line in lines:
            write(textwrap.fill(line, _WIDTH, initial_indent="    ", subsequent_indent="      "))


def table(root: Path) -> str:
    """The fidelity table of every reproduction whose ``ROOT/NAME/fidelity.csv`` exists."""
    from dlsched.reproduce.output import fidelity_table

    found = {
        name: root / name / "fidelity.csv"
        for name in REPRODUCTIONS.names()
        if (root / name / "fidelity.csv").is_file()
    }
    if not found:
        raise FileNotFoundError(
            f"{root}: no NAME/fidelity.csv in it; run `dlsched reproduce NAME` first (it "
            f"writes {DEFAULT_ROOT}/NAME), or give the folder holding them with --out"
        )
    sources = {name: REPRODUCTIONS.get(name).summary or name for name in found}
    return fidelity_table(found, sources)


def run(args: argparse.Namespace) -> int:
    """`dlsched reproduce`: --list, --table, or run one reproduction and compare."""
    if args.list:
        list_reproductions()
        return 0
    if args.table:
        print(table(Path(args.out) if args.out else DEFAULT_ROOT))
        return 0
    if args.name is None:
        raise ReproduceUsageError(
            "name a reproduction (`dlsched reproduce --list` lists them), or give --list or --table"
        )
    repro: Reproduction = REPRODUCTIONS.get(args.name)  # unknown: a did-you-mean
    out = Path(args.out) if args.out else DEFAULT_ROOT / repro.name
    shared = shared_folder(args.shared)
    print(
        f"{repro.name}: {repro.paper}; {repro.source}"
        + (f"\n--quick: {repro.quick_subset}" if args.quick else "")
        + f"\nresults: {out}",
        flush=True,
    )

    def progress(task: str, status: str, cpu_s: float) -> None:
        if status != "reused":
            print(f"  {task}: {status} ({cpu_s:,.1f} CPU s)", file=sys.stderr, flush=True)

    try:
        outcome = run_reproduction(
            repro,
            shared,
            out,
            quick=args.quick,
            workers=args.workers,
            only=args.only or (),
            on_task=progress,
        )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the finished tasks are stored in {out}; run the same command "
            "again to resume",
            file=sys.stderr,
        )
        return 130
    from dlsched.reproduce.output import print_points, summary_line, write_outputs

    print_points(outcome)
    written = write_outputs(outcome, plots=not args.no_plots)
    print()
    for task, error in outcome.failed.items():
        print(f"failed {task}: {error}")
    print(summary_line(outcome))
    print(f"wrote {', '.join(p.name for p in written)} in {out}")
    return 0 if outcome.ok else 1
