"""Helios' history-based duration predictor (Hu et al., "Characterization and Prediction of
Deep Learning Workloads in Large-Scale GPU Datacenters", SC '21, §5: QSSF's estimator).

The rules are those of the authors' artifact (``S-Lab-System-Group/HeliosArtifact``,
``framework/QSSF Service/estimators/estimator.py``, ``NaiveEstimator``), applied to the jobs
finished so far (the artifact also updates its history at every completion,
``update_train_data``):

1. The job's name is matched against the names of finished jobs with ``difflib``'s close
   matches (at most ``match_num`` = 2 names, similarity ``cutoff`` = 0.6: the artifact's
   values). With an exact match, the history is the same user's jobs of that name; with only
   close matches, the same user's jobs of those names. If the user has none, the prediction
   is the mean over every user's jobs of the name(s).
2. Within the user's matching jobs, those with the same GPU count are used if there are any
   (``check_history_job``).
3. Without a name match: the same user's jobs — with the same GPU count if any (rule 2, which
   the artifact applies only after a name match; here also without one, so that traces
   without job names still use the user's GPU count) — else every finished job.

The aggregate is the mean (the artifact's ``agg_method``); ``window`` = k uses only each
history's k most recently finished jobs — recency weighting, the artifact's commented-out
"weighted windows (only recent 3 jobs)" variant. Ours, not the paper's: ``vc_fallback``
(off by default) inserts the same VC and GPU count, then the same VC, before the global mean,
for traces that carry no users; ``default_s`` is the prediction before any job has finished
(the artifact trains on a month of history before its simulation starts; we have none).
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Hashable, Iterable

from dlsched.predict.base import FinishedJob, JobFeatures, Predictor


class _History:
    """Durations of one group of finished jobs: their mean, or their last `window` ones."""

    __slots__ = ("total", "count", "recent")

    def __init__(self, window: int | None) -> None:
        self.total = 0.0
        self.count = 0
        self.recent: deque[tuple[int, float]] | None = (
            None if window is None else deque(maxlen=window)
        )

    def add(self, order: int, duration: float) -> None:
        self.total += duration
        self.count += 1
        if self.recent is not None:
            self.recent.append((order, duration))


def _mean(histories: Iterable[_History], window: int | None) -> float | None:
    """The mean duration over the union of `histories` (over their `window` most recent
    jobs together when windowed); None when they hold no job."""
    groups = [h for h in histories if h.count]
    if not groups:
        return None
    if window is None:
        return sum(h.total for h in groups) / sum(h.count for h in groups)
    recent = sorted((entry for h in groups for entry in h.recent or ()), reverse=True)[:window]
    return sum(d for _, d in recent) / len(recent)


class HeliosPredictor(Predictor):
    """Helios' history rules: same user + job name, then same user + GPU count; a fallback."""

    name = "helios"

    def __init__(
        self,
        *,
        match_num: int = 2,
        cutoff: float = 0.6,
        window: int | None = None,
        vc_fallback: bool = False,
        default_s: float = 3600.0,
    ) -> None:
        if match_num < 1 or not 0.0 <= cutoff <= 1.0:
            raise ValueError("helios predictor: match_num must be >= 1 and cutoff in [0, 1]")
        if window is not None and window < 1:
            raise ValueError("helios predictor: window must be >= 1 (or None: every job)")
        if not default_s > 0:
            raise ValueError("helios predictor: default_s must be > 0")
        self.match_num = match_num
        self.cutoff = cutoff
        self.window = window
        self.vc_fallback = vc_fallback
        self.default_s = default_s

    def start(self) -> None:
        self._groups: dict[Hashable, _History] = {}
        self._names: list[str] = []  # job names seen, in first-seen order (difflib's order)
        self._known_names: set[str] = set()
        self._seen = 0

    def _group(self, key: Hashable) -> _History:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _History(self.window)
        return group

    def observe(self, record: FinishedJob) -> None:
        job, duration = record.features, record.duration_s
        self._seen += 1
        keys: list[Hashable] = [("all",)]
        if job.name is not None:
            keys.append(("name", job.name))
            if job.name not in self._known_names:
                self._known_names.add(job.name)
                self._names.append(job.name)
        if job.user is not None:
            keys += [("user", job.user), ("user-gpus", job.user, job.num_gpus)]
            if job.name is not None:
                keys += [
                    ("user-name", job.user, job.name),
                    ("user-name-gpus", job.user, job.name, job.num_gpus),
                ]
        if job.vc is not None:
            keys += [("vc", job.vc), ("vc-gpus", job.vc, job.num_gpus)]
        for key in keys:
            self._group(key).add(self._seen, duration)

    def _get(self, key: Hashable) -> list[_History]:
        group = self._groups.get(key)
        return [] if group is None else [group]

    def _user_history(self, user: str, names: list[str] | None, gpus: int) -> float | None:
        """Rule 2: the user's jobs (of `names`), with the same GPU count if there are any."""
        window = self.window
        if names is None:
            same = _mean(self._get(("user-gpus", user, gpus)), window)
            return same if same is not None else _mean(self._get(("user", user)), window)
        same_gpus = [g for n in names for g in self._get(("user-name-gpus", user, n, gpus))]
        found = _mean(same_gpus, window)
        if found is None:
            found = _mean([g for n in names for g in self._get(("user-name", user, n))], window)
        return found

    def predict(self, features: JobFeatures, now: float) -> float:
        window, user, gpus = self.window, features.user, features.num_gpus
        if features.name is not None and self._names:
            if features.name in self._known_names:
                matches = [features.name]  # difflib ranks an exact match first
            else:
                matches = difflib.get_close_matches(
                    features.name, self._names, n=self.match_num, cutoff=self.cutoff
                )
            if matches:
                found = None if user is None else self._user_history(user, matches, gpus)
                if found is None:
                    found = _mean([g for n in matches for g in self._get(("name", n))], window)
                if found is not None:
                    return found
        if user is not None:
            found = self._user_history(user, None, gpus)
            if found is not None:
                return found
        if self.vc_fallback and features.vc is not None:
            for key in (("vc-gpus", features.vc, gpus), ("vc", features.vc)):
                found = _mean(self._get(key), window)
                if found is not None:
                    return found
        found = _mean(self._get(("all",)), window)
        return self.default_s if found is None else found

    def __repr__(self) -> str:
        return (
            f"HeliosPredictor(match_num={self.match_num}, cutoff={self.cutoff}, "
            f"window={self.window}, vc_fallback={self.vc_fallback})"
        )
