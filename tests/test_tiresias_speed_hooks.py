"""Why the engine calls paper-mode Tiresias at every completion (issue 16, target 3).

A completion that starts nothing is not a no-op for Tiresias: the authors' demotion check is
planned at each scheduling event from the run seconds at that event (`crossings.py`), so a
call made only for a completion still moves the next check of a multi-GPU job — and with it
when the job is demoted and preempted. So Tiresias must not declare
`call_when_nothing_fits = False` or `waiting_for` (`dlsched.policies.base`): the engine would
then skip such calls and change the results. Only its own wake-ups are answered by `woken`.
"""

import pandas as pd

import dlsched
from dlsched.cluster import Cluster
from dlsched.policies.tiresias import Tiresias, TiresiasGittins


def _run(policy: Tiresias) -> pd.DataFrame:
    """a and c (2 GPUs each) from 0 on 4 GPUs; w (4 GPUs) arrives at 10 and waits behind
    them in the top queue; c finishes at 20 (a completion where nothing can start)."""
    workload = pd.DataFrame(
        [("a", 0, 2, 300.0), ("c", 0, 2, 20.0), ("w", 10, 4, 10.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "P100", "count": 1, "gpus_per_node": 4}]}
    )
    return dlsched.simulate(workload, cluster, policy).jobs.set_index("job_id")


class _SkipsIdleCompletions(Tiresias):
    """Tiresias as if the engine skipped its calls at completions that start nothing: such a
    call leaves the planned demotion check where it was."""

    def schedule(self, view):
        only_a_completion = self._event and not self._arrived and not self._timers
        check, asked = self._next_check, self._asked
        answer = super().schedule(view)
        if only_a_completion and answer is None:
            self._next_check, self._asked = check, asked
        return answer


def test_a_completion_that_starts_nothing_moves_the_demotion_check():
    """Threshold 100 GPU-s: w's arrival at 10 plans a's check at 10 + (100 − 20 + 10) / 2 =
    55; c's completion at 20 starts nothing but replans it at 20 + (100 − 40 + 20) / 2 = 60,
    where a is demoted and w preempts it. Had that call been skipped: 55."""
    done = _run(Tiresias(thresholds=[100]))
    assert done.loc["w", "start_time"] == 60.0
    assert done.loc["a", "preemptions"] == 1
    skipped = _run(_SkipsIdleCompletions(thresholds=[100]))
    assert skipped.loc["w", "start_time"] == 55.0


def test_paper_tiresias_asks_for_every_call_but_answers_its_own_wake_ups():
    """Neither algorithm declares its calls skippable when nothing fits (they preempt and
    replan at every event); both answer for their own wake-ups (`woken`)."""
    for policy in (Tiresias(), TiresiasGittins()):
        assert policy.call_when_nothing_fits is True
        assert not hasattr(policy, "waiting_for")
        assert callable(policy.woken)
