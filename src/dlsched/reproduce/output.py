"""What a reproduction writes: ``fidelity.csv``, ``fidelity.md``, one overlay plot per figure,
and the fidelity table of every reproduction for the README.

matplotlib is imported only by `write_plots`.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlsched.atomic import save_figure, write_text
from dlsched.reproduce.runner import PointResult, ReproductionOutcome, deviation_stats

CSV_COLUMNS = (
    "reproduction",
    "mode",
    "figure",
    "series",
    "x_name",
    "x",
    "metric",
    "published",
    "ours",
    "deviation",
    "tolerance",
    "relative",
    "within",
    "task",
    "note",
)


def _number(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def deviation_text(value: float) -> str:
    """A relative deviation as text: ``+3.2 %`` (``-`` where undefined)."""
    return "-" if math.isnan(value) else f"{100 * value:+.1f} %"


def rows(outcome: ReproductionOutcome) -> list[dict[str, Any]]:
    """One CSV row per point."""
    mode = ("quick" if outcome.quick else "full") + (" subset" if outcome.subset else "")
    return [
        {
            "reproduction": outcome.reproduction.name,
            "mode": mode,
            "figure": r.point.figure,
            "series": r.point.series,
            "x_name": r.point.x_name,
            "x": r.point.x,
            "metric": r.point.metric,
            "published": r.point.published,
            "ours": r.ours,
            "deviation": r.deviation,
            "tolerance": r.point.tolerance.describe(),
            "relative": r.point.tolerance.relative,
            "within": r.within,
            "task": r.point.task.id,
            "note": r.point.note,
        }
        for r in outcome.points
    ]


def print_points(outcome: ReproductionOutcome, write: Any = print) -> None:
    """Ours vs published per point, with the deviation and the verdict, grouped by figure."""
    figures: dict[str, list[PointResult]] = {}
    for result in outcome.points:
        figures.setdefault(result.point.figure, []).append(result)
    for figure, results in figures.items():
        write(f"\n{figure}")
        table = [("series", results[0].point.x_name, "metric", "published", "ours", "dev", "tol")]
        for r in results:
            table.append(
                (
                    r.point.series,
                    f"{r.point.x:g}",
                    r.point.metric,
                    _number(r.point.published),
                    _number(r.ours),
                    deviation_text(r.deviation),
                    r.point.tolerance.describe() + ("" if r.within else "  OUT"),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            cells = [
                cell.ljust(w) if i in (0, 2, 6) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            write("  " + "  ".join(cells).rstrip())


def write_csv(outcome: ReproductionOutcome, path: Path) -> Path:
    """``fidelity.csv``: one row per point (`CSV_COLUMNS`)."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(rows(outcome))
    write_text(path, text.getvalue())
    return path


def write_markdown(outcome: ReproductionOutcome, path: Path) -> Path:
    """``fidelity.md``: the source, the summary line and one table per figure."""
    repro = outcome.reproduction
    stats = outcome.stats()
    lines = [
        f"# {repro.name}: {repro.paper}",
        "",
        f"Source: {repro.source}. Data: "
        + ("; ".join(f"`{d.path}` ({d.what})" for d in repro.data) or "bundled with dlsched")
        + ".",
        "",
        f"Run: `dlsched reproduce {repro.name}{' --quick' if outcome.quick else ''}`"
        + (f" ({repro.quick_subset})" if outcome.quick else "")
        + f"; {outcome.cpu_s:,.0f} CPU s.",
        "",
        f"**{stats['within']} of {stats['points']} points within tolerance**; "
        + _deviations_text(stats, ", ")
        + ".",
    ]
    if outcome.failed:
        lines += ["", "Failed tasks:", ""]
        lines += [f"- `{task}`: {error}" for task, error in outcome.failed.items()]
    for note in repro.notes:
        lines += ["", note]
    figures: dict[str, list[PointResult]] = {}
    for result in outcome.points:
        figures.setdefault(result.point.figure, []).append(result)
    for figure, results in figures.items():
        x_name = results[0].point.x_name
        lines += [
            "",
            f"## {figure}",
            "",
            f"| series | {x_name} | metric | published | ours | deviation | tolerance | ok "
            "| note |",
            "|---|---:|---|---:|---:|---:|---|---|---|",
        ]
        for r in results:
            lines.append(
                f"| {r.point.series} | {r.point.x:g} | {r.point.metric} | "
                f"{_number(r.point.published)} | {_number(r.ours)} | "
                f"{deviation_text(r.deviation)} | {r.point.tolerance.describe()} | "
                f"{'yes' if r.within else '**no**'} | {r.point.note} |"
            )
    write_text(path, "\n".join(lines) + "\n")
    return path


def slug(text: str) -> str:
    """A file-name-safe form of a figure's name."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "figure"


def write_plots(outcome: ReproductionOutcome, folder: Path) -> list[Path]:
    """One PNG per figure: published values as open circles, ours as a line through
    crosses, per series (the crosses show ours where a series has one point: a quick run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: dict[str, list[PointResult]] = {}
    for result in outcome.points:
        figures.setdefault(result.point.figure, []).append(result)
    written = []
    for figure, results in figures.items():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        series: dict[str, list[PointResult]] = {}
        for r in results:
            series.setdefault(r.point.series, []).append(r)
        for index, (name, points) in enumerate(series.items()):
            points = sorted(points, key=lambda r: r.point.x)
            colour = f"C{index % 10}"
            xs = [r.point.x for r in points]
            ax.plot(xs, [r.ours for r in points], "-x", color=colour, markersize=5, label=name)
            ax.plot(xs, [r.point.published for r in points], "o", color=colour, fillstyle="none")
        ax.plot([], [], "-x", color="black", markersize=5, label="dlsched")
        ax.plot([], [], "o", color="black", fillstyle="none", label="published")
        ax.set_xlabel(results[0].point.x_name)
        ax.set_ylabel(results[0].point.metric)
        ax.set_title(f"{outcome.reproduction.name}: {figure}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        path = folder / f"{slug(figure)}.png"
        save_figure(fig, path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_outputs(outcome: ReproductionOutcome, plots: bool = True) -> list[Path]:
    """Write ``fidelity.csv``, ``fidelity.md`` and (with `plots`) the overlay plots."""
    outcome.out.mkdir(parents=True, exist_ok=True)
    written = [
        write_csv(outcome, outcome.out / "fidelity.csv"),
        write_markdown(outcome, outcome.out / "fidelity.md"),
    ]
    if plots and outcome.points:
        written += write_plots(outcome, outcome.out)
    return written


def read_fidelity(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``fidelity.csv``, numbers parsed."""
    with path.open(newline="") as handle:
        found = list(csv.DictReader(handle))
    for row in found:
        for key in ("x", "published", "ours", "deviation"):
            row[key] = float(row[key]) if row[key] not in ("", "nan") else math.nan
        row["within"] = row["within"] == "True"
        row["relative"] = row.get("relative", "True") == "True"
    return found


def fidelity_table(results: Mapping[str, Path], sources: Mapping[str, str]) -> str:
    """The README's fidelity table: one row per reproduction whose ``fidelity.csv`` is in
    `results` (name → path): points, how many within tolerance, worst and median deviation.

    `sources` names each reproduction's paper and figure. Deviations are ours / published
    − 1 over the points with a relative tolerance (counts such as missed deadlines, held to
    ± a number, are in the within-tolerance count only).
    """
    lines = [
        "| reproduction | source | points | within tolerance | worst deviation | "
        "median abs. deviation |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, path in results.items():
        found = read_fidelity(path)
        compared = [r for r in found if r["relative"] and not math.isnan(r["deviation"])]
        deviations = [abs(r["deviation"]) for r in compared]
        worst = max(compared, key=lambda r: abs(r["deviation"]), default=None)
        mode = found[0]["mode"] if found else "full"
        quick = f" ({mode})" if mode != "full" else ""
        median = _median(deviations)
        within = str(sum(r["within"] for r in found))
        out = [r for r in found if not r["within"]]
        if out:
            shown = max(out, key=lambda r: abs(r["ours"] - r["published"]) / max(r["published"], 1))
            within += f" (out: {_where(shown)} {deviation_text(shown['deviation'])}"
            within += f"{f' and {len(out) - 1} more' if len(out) > 1 else ''})"
        worst_text = (
            f"{deviation_text(worst['deviation'])} ({_where(worst)})" if worst is not None else "-"
        )
        lines.append(
            f"| `{name}`{quick} | {sources.get(name, '')} | {len(found)} | {within} | "
            f"{worst_text} | {deviation_text(median).lstrip('+')} |"
        )
    return "\n".join(lines)


def _where(row: Mapping[str, Any]) -> str:
    """Where a CSV row's point is: series, x and metric."""
    return f"{row['series']} @ {row['x']:g} {row['x_name']}, {row['metric']}"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summary_line(outcome: ReproductionOutcome) -> str:
    """One line: points within tolerance, worst and median deviation, CPU time."""
    stats = deviation_stats(outcome.points)
    return (
        f"{outcome.reproduction.name}: {stats['within']}/{stats['points']} points within "
        f"tolerance; {_deviations_text(stats, '; ')}; "
        f"{len(outcome.ran)} tasks ran, {len(outcome.reused)} reused, "
        f"{len(outcome.failed)} failed; {outcome.cpu_s:,.1f} CPU s"
    )


def _deviations_text(stats: Mapping[str, Any], sep: str) -> str:
    """The worst and median relative deviation, or why there are none: every point's
    tolerance is absolute (a difference), whose relative deviations are not summarised."""
    if math.isnan(stats["worst"]):
        return "no relative deviation to summarise (every tolerance here is absolute)"
    return (
        f"worst deviation {deviation_text(stats['worst'])} ({stats['worst_point']}){sep}"
        f"median |deviation| {deviation_text(stats['median']).lstrip('+')}"
    )
