"""Job-duration predictors: a plug-in family, trained only on jobs that have finished.

A predictor (`Predictor`) predicts a job's duration from the history of jobs that finished
before the moment of prediction. It sees that history through one narrow interface —
`observe(FinishedJob)` at each completion, `predict(JobFeatures, now)` when a policy asks —
and never the trace table (`dlsched.predict.base`). Policies consult one through the
estimator they already see: ``estimator="predict:helios"`` (`dlsched.perf.predicting`).

Built-ins: ``oracle`` (the truth, for comparison), ``helios`` (Helios' history rules, Hu et
al., SC '21), ``gbdt`` (scikit-learn's gradient-boosted trees over the trace's own columns;
needs the ``predict`` extra). Third-party predictors join through the ``dlsched.predictors``
entry-point group, e.g. ``mine = mypkg.module:MyPredictor``.

>>> names()
['gbdt', 'helios', 'oracle']
>>> get("helios").name
'helios'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlsched import registry as _generic
from dlsched.predict.base import FinishedJob, JobFeatures, Predictor

PREDICTORS: _generic.Registry[Callable[..., Predictor]] = _generic.Registry(
    "predictor", entry_point_group="dlsched.predictors"
)
"""Every predictor factory (usually a class) by name. Built-ins are declared lazily: the
gradient-boosted one imports scikit-learn only when it is used."""
PREDICTORS.add_lazy("oracle", "dlsched.predict.oracle:OraclePredictor")
PREDICTORS.add_lazy("helios", "dlsched.predict.helios:HeliosPredictor")
PREDICTORS.add_lazy("gbdt", "dlsched.predict.gbdt:GradientBoostedPredictor")


def names() -> list[str]:
    """Every registered predictor name, sorted."""
    return PREDICTORS.names()


def get(name: str, **params: Any) -> Predictor:
    """A new predictor by name, with its parameters (checked first: an unknown parameter or
    a value of the wrong type is a ValueError naming it)."""
    factory = PREDICTORS.get(name)
    _generic.check_arguments(f"predictor {name!r}", factory, params)
    return factory(**params)


__all__ = ["PREDICTORS", "FinishedJob", "JobFeatures", "Predictor", "get", "names"]
