"""Progress bars: `simulate(progress=...)`, `engine.progress.Progress` and the CLI flag."""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.cli import main
from dlsched.engine.progress import Progress, simulated_time


def _jobs(n: int = 30) -> pd.DataFrame:
    """`n` one-GPU jobs of 10 s, one a second: the last finishes at n - 1 + 10."""
    return pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": [float(i) for i in range(n)],
            "num_gpus": [1] * n,
            "duration": [10.0] * n,
        }
    )


def _cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    )


def test_progress_true_shows_jobs_finished_of_the_total_and_simulated_time(capsys):
    """progress=True draws a bar that ends at 30/30 jobs with the simulated end time."""
    dlsched.simulate(_jobs(), _cluster(), "fifo", progress=True)
    err = capsys.readouterr().err
    assert "30/30" in err
    assert "job" in err
    assert "simulated 00:01:" in err  # 30 jobs on 4 GPUs of 10 s each end after a minute


def test_progress_is_off_by_default(capsys):
    """simulate() without `progress` writes nothing to stderr."""
    dlsched.simulate(_jobs(), _cluster(), "fifo")
    assert capsys.readouterr().err == ""


def test_progress_none_is_silent_off_a_terminal(capsys):
    """progress=None shows a bar only on a terminal; captured stderr is not one."""
    dlsched.simulate(_jobs(), _cluster(), "fifo", progress=None)
    assert capsys.readouterr().err == ""


def test_a_bar_does_not_change_the_result():
    """The same run with and without a bar gives identical job and event tables."""
    plain = dlsched.simulate(_jobs(), _cluster(), "srtf")
    shown = dlsched.simulate(_jobs(), _cluster(), "srtf", progress=True)
    pd.testing.assert_frame_equal(plain.jobs, shown.jobs)
    pd.testing.assert_frame_equal(plain.events, shown.events)


def test_the_bar_is_asked_to_update_once_per_thousandth_of_the_jobs():
    """With 10,000 jobs the engine's check fires every 10 completions, not at each."""
    bar = Progress(10_000, show=False)
    assert not bar.active
    assert bar.next_check == 10
    bar.update(10, 5.0)  # an inactive bar only moves its next check
    assert bar.next_check == 20


def test_a_bar_redraws_at_most_every_half_second(capsys):
    """Two updates in quick succession draw once: the second is throttled."""
    bar = Progress(100, show=True)
    capsys.readouterr()
    bar._drawn = 0.0  # the last draw long ago
    bar.update(1, 1.0)
    first = capsys.readouterr().err
    bar.update(2, 2.0)
    assert "1/100" in first
    assert capsys.readouterr().err == ""
    bar.close(100, 3.0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.0, "00:00:00"), (3_661.9, "01:01:01"), (2 * 86_400 + 5, "2d 00:00:05")]
)
def test_simulated_time_reads_as_days_and_clock_time(seconds, text):
    """Simulated seconds print as [Nd ]HH:MM:SS (whole seconds, truncated)."""
    assert simulated_time(seconds) == text


@pytest.mark.slow  # replays the bundled Philly day: 6 s
def test_cli_progress_flag_draws_a_bar(capsys):
    """`dlsched replay --progress` draws the bar; `--no-progress` does not."""
    assert main(["replay", "--progress", "--json"]) == 0
    assert "2302/2302" in capsys.readouterr().err
    assert main(["replay", "--no-progress", "--json"]) == 0
    assert "2302/2302" not in capsys.readouterr().err


def test_progress_other_than_a_bool_or_none_is_refused():
    """progress="yes" is an error naming the values it takes, not a silent truthy bar."""
    with pytest.raises(ValueError, match="progress must be True, False or None"):
        dlsched.simulate(_jobs(), _cluster(), "fifo", progress="yes")
