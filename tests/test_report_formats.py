"""`dlsched report` for papers: PDF/SVG and a resolution, time axes in the unit their values
need (log where they span decades), short labels, curves that do not hide each other."""

from __future__ import annotations

import struct

import pytest
from experiment_helpers import write_experiment

from dlsched import report
from dlsched.cli import main
from dlsched.experiments import run_experiment

# Jobs of 1 to 10 hours, in a queue: JCTs and makespan run into hours and days.
LONG_TRACE = """job_id,submit_time,num_gpus,duration
1,0,4,36000
2,10,4,3600
3,20,2,7200
4,30,2,18000
5,40,4,3600
6,50,1,360
"""


@pytest.fixture(scope="module")
def long_grid(tmp_path_factory):
    """fifo and srtf, with a long parameter value, on hours-long jobs; two loads, one seed."""
    folder = tmp_path_factory.mktemp("long")
    path = write_experiment(
        folder,
        seeds=1,
        policies=["fifo", {"name": "srtf", "params": {}, "label": "srtf(x=100000000)"}],
    )
    (folder / "tiny.csv").write_text(LONG_TRACE)
    run_experiment(path, folder / "out", executor="local")
    return folder / "out"


def _png_width(path) -> int:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", head[16:20])[0]


@pytest.mark.slow  # every format at two resolutions: 23 s on 2 loaded cores
def test_every_format_is_written_and_the_dpi_scales_the_png(long_grid, tmp_path):
    """png, pdf and svg of every plot; a PNG at 220 dpi is twice as wide as at 110."""
    written = report.write_report(long_grid, formats=("png", "pdf", "svg"), dpi=220)
    names = {p.name for p in written}
    for plot in report.PLOTS:
        stem = plot.removesuffix(".png")
        assert {f"{stem}.png", f"{stem}.pdf", f"{stem}.svg"} <= names
    assert (long_grid / "jct_cdf.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (long_grid / "jct_cdf.svg").read_bytes()[:2000]
    wide = _png_width(long_grid / "jct_cdf.png")
    report.write_report(long_grid)  # the defaults: PNG at 110 dpi
    assert wide == pytest.approx(2 * _png_width(long_grid / "jct_cdf.png"), rel=0.01)


def test_pdf_plots_are_byte_identical_when_written_twice(long_grid):
    """No creation date in a PDF: the same results give the same file."""
    report.write_report(long_grid, formats="pdf")
    first = {p: (long_grid / p).read_bytes() for p in ("policy_bars.pdf", "jct_cdf.pdf")}
    report.write_report(long_grid, formats="pdf")
    assert all((long_grid / p).read_bytes() == data for p, data in first.items())


def test_summary_md_links_a_pdf_when_it_is_the_only_format(long_grid):
    """Only PDF: summary.md links each plot's PDF instead of embedding a missing PNG."""
    report.write_report(long_grid, formats=("pdf",))
    text = (long_grid / "summary.md").read_text()
    assert "[jct_cdf (PDF)](jct_cdf.pdf)" in text
    assert "![jct_cdf](jct_cdf.png)" not in text


def test_time_axes_are_in_hours_with_units_and_labels_are_short(long_grid):
    """Hours-long results: bars say "makespan (h)" or "(days)"; labels use 1e8."""
    data = report.collect(long_grid)
    fig = report._plot_bars(data)
    ylabels = [ax.get_ylabel() for ax in fig.axes if ax.get_visible()]
    assert any(label.startswith("makespan (") and "(s)" not in label for label in ylabels)
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    assert "srtf(x=1e8)" in ticks and "srtf(x=100000000)" not in ticks
    cdf = report._plot_jct_cdf(data, report._job_tables(data))
    assert "(h)" in cdf.axes[0].get_xlabel()


def test_lines_of_different_policies_differ_in_marker_and_style(long_grid):
    """Two policies: different markers and line styles, and equal points shifted apart."""
    data = report.collect(long_grid)
    fig = report._plot_vs_load(data)
    bars = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}
    lines = [bars["fifo"], bars["srtf(x=1e8)"]]
    assert lines[0].get_marker() != lines[1].get_marker()
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    assert list(lines[0].get_xdata()) != list(lines[1].get_xdata())


def test_a_log_axis_when_values_span_decades():
    """spans_decades decides the log scale; time_unit the unit."""
    assert report.spans_decades([1.0, 1e4]) and not report.spans_decades([10.0, 500.0])
    assert report.time_unit([59.0]) == ("s", 1.0)
    assert report.time_unit([3 * 86400.0]) == ("days", 86400.0)


def test_cli_report_takes_formats_and_dpi(long_grid, capsys):
    """`dlsched report DIR --format svg --dpi 150` writes SVGs; a bad format or dpi is an error."""
    assert main(["report", str(long_grid), "--format", "svg", "--dpi", "150"]) == 0
    assert "policy_bars.svg" in capsys.readouterr().out
    for bad in (["--format", "gif"], ["--dpi", "0"], ["--dpi", "nan"]):
        assert main(["report", str(long_grid), *bad]) == 2
    err = capsys.readouterr().err
    assert "gif" in err and "png, pdf, svg" in err


def test_write_report_refuses_a_bad_format_or_dpi(long_grid):
    with pytest.raises(ValueError, match="not one of png, pdf, svg"):
        report.write_report(long_grid, formats=("jpeg",))
    with pytest.raises(ValueError, match="dpi"):
        report.write_report(long_grid, dpi=float("nan"))
