"""Generate the reference pages from the registries and parsers (run by mkdocs-gen-files).

Nothing here is written by hand: the policy catalogue, placements, trace formats, bundled
clusters, the CLI and the fidelity table come from what dlsched registers at build time, so
a new policy, format or option appears in the docs without anyone editing a page. The pages
exist only in the built site (``mkdocs build``); none is committed.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import mkdocs_gen_files

from dlsched import catalogue

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
SNAPSHOT = DOCS / "data" / "fidelity-table.md"


def _cell(text: str) -> str:
    """Text safe inside one markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")


# -- fidelity ---------------------------------------------------------------------------------


def fidelity_table() -> tuple[str, str]:
    """The fidelity table and where it comes from: this checkout's reproduction results
    (``results/reproduce/*/fidelity.csv``, as ``dlsched reproduce --table`` prints them)
    where they exist, else the table recorded from the last full runs (docs/data)."""
    from dlsched.reproduce.command import table

    results = ROOT / "results" / "reproduce"
    try:
        return table(results), f"`dlsched reproduce --table` over `{results.name}/` at build time"
    except FileNotFoundError:
        recorded = SNAPSHOT.read_text(encoding="utf-8").strip()
        return recorded, (
            "the output of `dlsched reproduce --table` after full runs of every reproduction "
            "(2026-11-24/25; the six added since, 2026-12-02), recorded in "
            "`docs/data/fidelity-table.md`; a checkout with `results/reproduce/` builds the table from its own results instead"
        )


def fidelity_rows(text: str) -> dict[str, str]:
    """Reproduction name → its row of the fidelity table (markdown)."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\|\s*`([^`]+)`", line)
        if match:
            rows[match.group(1)] = line
    return rows


def write_fidelity(text: str, source: str) -> None:
    with mkdocs_gen_files.open("reference/fidelity.md", "w") as out:
        out.write("# Fidelity table\n\n")
        out.write(
            "Each published result dlsched is checked against is a registered reproduction "
            "(`dlsched reproduce --list`). Deviation is ours ÷ published − 1 over the points "
            "with a relative tolerance; counts held to ± a number (missed deadlines) count only "
            "in *within tolerance*. What lies behind the points that are out: "
            "[Reproduce a paper's figure](../tutorials/reproduce.md#where-points-are-out).\n\n"
        )
        out.write(text + "\n\n")
        out.write(f"*Generated from {source}.*\n")


# -- policies ---------------------------------------------------------------------------------


def _parameters_table(entry: catalogue.PolicyEntry) -> str:
    if not entry.parameters:
        return "No parameters.\n"
    lines = ["| parameter | default | type |", "|---|---|---|"]
    for p in entry.parameters:
        default = "*required*" if p.default is None else f"`{_cell(p.default)}`"
        kind = _cell(p.annotation)  # plain text: a code span would show the escaped "|"
        lines.append(f"| `{p.name}` | {default} | {kind} |")
    return "\n".join(lines) + "\n"


def write_policies(fidelity: str) -> None:
    entries = catalogue.policies()
    used_by = catalogue.policy_reproductions()
    from dlsched.reproduce import shared_folder

    shared = shared_folder(None)
    mapping = (
        f"read from each reproduction's planned runs (published data in `{shared.name}/`)"
        if shared.is_dir()
        else "read from the reproductions' code: the shared data folder (`../shared`) was "
        "not found when this page was built, so a reproduction whose runs name their "
        "policies only in its data is missing here"
    )
    rows = fidelity_rows(fidelity)
    header = "\n".join(fidelity.splitlines()[:2])
    by_module: dict[str, list[catalogue.PolicyEntry]] = {}
    for entry in entries:
        by_module.setdefault(entry.module, []).append(entry)
    with mkdocs_gen_files.open("reference/policies.md", "w") as out:
        out.write("# Policy catalogue\n\n")
        out.write(
            f"All {len(entries)} registered policies, generated from the policy registry "
            "(`dlsched.catalogue.policies()`, the same registry `dlsched policies` lists): "
            "each family's paper, what it models and what it simplifies (its module "
            "docstring), each policy's parameters with their defaults, and the reproductions "
            "that run it with their fidelity numbers. A policy plugged in through the "
            "`dlsched.policies` entry-point group appears here once installed.\n\n"
            f"Which reproductions run a policy is {mapping}. "
            "Placements (`placement=` on a policy) are listed in "
            "[Placements](placements.md).\n\n"
        )
        out.write("| policy | what it does | reproductions |\n|---|---|---|\n")
        for entry in entries:
            found = ", ".join(f"`{r}`" for r in used_by.get(entry.name, [])) or "–"
            out.write(
                f"| [`{entry.name}`](#{_anchor(entry.name)}) | {_cell(entry.summary)} | {found} |\n"
            )
        for module, members in by_module.items():
            names = ", ".join(f"`{m.name}`" for m in members)
            out.write(f"\n## {names}\n\n")
            out.write(f"*Module `{module}`.*\n\n")
            about = members[0].about
            out.write('??? abstract "The paper, what is modelled, what is simplified"\n\n')
            for line in about.splitlines():
                out.write(f"    {line}\n" if line.strip() else "\n")
            out.write("\n")
            for entry in members:
                out.write(f"\n### `{entry.name}` {{#{_anchor(entry.name)}}}\n\n")
                out.write(f"{entry.summary}\n\n")
                if entry.aliases:
                    also = ", ".join(f"`{a}`" for a in entry.aliases)
                    out.write(f"It also answers to {also} (older spellings, kept working).\n\n")
                out.write(_parameters_table(entry) + "\n")
                reproductions = used_by.get(entry.name, [])
                if reproductions:
                    out.write("Reproductions that run it (the whole reproduction's numbers):\n\n")
                    out.write(header + "\n")
                    for name in reproductions:
                        out.write(rows.get(name, f"| `{name}` | not in the table | | | | |") + "\n")
                    out.write("\n")
                else:
                    out.write("No registered reproduction runs it.\n\n")


# -- placements, formats, clusters ------------------------------------------------------------


def _indented(text: str) -> str:
    return "".join(f"    {line}\n" if line.strip() else "\n" for line in text.splitlines())


def write_placements() -> None:
    with mkdocs_gen_files.open("reference/placements.md", "w") as out:
        out.write("# Placements\n\n")
        out.write(
            "Every registered placement strategy (`dlsched.engine.placement.STRATEGIES`), given "
            "as `placement=NAME` to any policy that places through the view, or as "
            "`view.place(job, strategy=NAME)` inside a policy. A placement is not a policy: "
            "`dlsched replay --policy fifo --param placement=fgd`.\n\n"
        )
        out.write("| placement | what it does | module |\n|---|---|---|\n")
        for entry in catalogue.placements():
            first = entry.about.split("\n\n")[0]
            out.write(f"| `{entry.name}` | {_cell(first)} | `{entry.module}` |\n")


def write_trace_formats() -> None:
    formats = catalogue.trace_formats()
    with mkdocs_gen_files.open("reference/trace-formats.md", "w") as out:
        out.write("# Trace formats\n\n")
        out.write(
            f"The {len(formats)} registered trace formats (`dlsched.traces.LOADERS`), each "
            "with its loader's documentation. `load_trace(path)` detects the format; "
            "`load_trace(path, format=NAME)` names it. How to use them: "
            "[Trace formats and their quirks](../how-to/traces.md).\n\n"
        )
        for entry in formats:
            out.write(f"## `{entry.name}`\n\n*Module `{entry.module}`.*\n\n")
            out.write("```text\n" + entry.about.replace("```", "'''") + "\n```\n\n")


def write_predictors() -> None:
    entries = catalogue.predictors()
    with mkdocs_gen_files.open("reference/predictors.md", "w") as out:
        out.write("# Duration predictors\n\n")
        out.write(
            f"The {len(entries)} registered job-duration predictors "
            "(`dlsched.predict.PREDICTORS`, `dlsched.catalogue.predictors()`), trained only "
            "on jobs that finished before each prediction. A run's policies consult one "
            "through the estimator: `--estimator predict:NAME` or "
            '`estimator="predict:NAME"`; the prediction error is in `summary()` '
            "(`prediction_mae_s`, `prediction_median_rel_error`, "
            "`prediction_p90_rel_error`). Their features: "
            "`dlsched.traces.transforms.history_features`.\n\n"
        )
        out.write("| predictor | estimator | what it does | module |\n|---|---|---|---|\n")
        for entry in entries:
            out.write(
                f"| `{entry.name}` | `{entry.estimator}` | {_cell(entry.summary)} | "
                f"`{entry.module}` |\n"
            )
        out.write("\n")
        for entry in entries:
            out.write(f"## `{entry.name}`\n\n*Module `{entry.module}`.*\n\n")
            if entry.parameters:
                out.write("| parameter | default |\n|---|---|\n")
                for param in entry.parameters:
                    default = "required" if param.default is None else f"`{param.default}`"
                    out.write(f"| `{param.name}` | {default} |\n")
                out.write("\n")
            out.write("```text\n" + entry.about.replace("```", "'''") + "\n```\n\n")


def write_clusters() -> None:
    clusters = catalogue.bundled_clusters()
    with mkdocs_gen_files.open("reference/clusters.md", "w") as out:
        out.write("# Bundled clusters\n\n")
        out.write(
            f"The {len(clusters)} cluster configs bundled with dlsched "
            "(`configs/clusters/`, also inside the wheel): `load_cluster(NAME)` or "
            "`--cluster NAME`. Their sources and licences: `configs/clusters/README.md`; "
            "the format: [Cluster YAML](../how-to/clusters.md).\n\n"
        )
        out.write("| cluster | GPUs | by type | nodes | VCs | description |\n")
        out.write("|---|---:|---|---:|---:|---|\n")
        for c in clusters:
            types = ", ".join(f"{n} {t}" for t, n in c.gpus_by_type.items())
            total = sum(c.gpus_by_type.values())
            out.write(
                f"| `{c.name}` | {total:,} | {types} | {c.nodes:,} | {c.vcs} | "
                f"{_cell(c.description)} |\n"
            )


# -- command line -----------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its sub-commands here only
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def write_cli() -> None:
    from dlsched.cli import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal: the same page anywhere

    parser = _parser()
    with mkdocs_gen_files.open("reference/cli.md", "w") as out:
        out.write("# Command line\n\n")
        out.write("Generated from the `dlsched` command's own argument parsers.\n\n")
        out.write("```text\n" + parser.format_help() + "```\n\n")
        for name, sub in _subparsers(parser).items():
            out.write(f"## `dlsched {name}`\n\n```text\n{sub.format_help()}```\n\n")


fidelity, source = fidelity_table()
write_fidelity(fidelity, source)
write_policies(fidelity)
write_placements()
write_trace_formats()
write_predictors()
write_clusters()
write_cli()
