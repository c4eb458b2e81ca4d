"""Lazy heavy imports (issue 16, target 4): resolving a policy name imports every built-in
policy module, so scipy must load on a policy's first solve, not at module import, or every
first `simulate()` (FIFO included) pays ~0.3 CPU-s for it."""

from test_imports import _run  # a fresh interpreter running `code`


def test_a_fifo_simulation_never_imports_scipy():
    """In a fresh interpreter, `get("fifo")` and a small FIFO `simulate()` leave scipy unloaded."""
    code = (
        "import sys, dlsched, dlsched.policies\n"
        "dlsched.policies.get('fifo')\n"
        "assert 'dlsched.policies.gavel.lp' in sys.modules  # the registry did import it\n"
        "workload = dlsched.load_trace(dlsched.bundled_trace('tiresias_60_job.csv'))\n"
        "cluster = dlsched.load_cluster('tiresias-60')\n"
        "summary = dlsched.simulate(workload, cluster, policy='fifo').summary()\n"
        "assert summary['avg_jct'] > 0, summary\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('scipy', 'matplotlib', 'dask', 'clarabel', 'ecos', 'cvxpy', 'highspy'))\n"
        "assert not loaded, loaded[:5]\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_resolving_a_policy_imports_no_pandas():
    """`names()` and `get("fifo")` (what `dlsched policies` and the runner's checks do) import
    every policy module but neither pandas nor pyarrow: those load with the first trace."""
    code = (
        "import sys, dlsched.policies\n"
        "assert 'srtf' in dlsched.policies.names()\n"
        "dlsched.policies.get('fifo')\n"
        "loaded = [m for m in ('pandas', 'pyarrow', 'scipy') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_a_gavel_lp_loads_scipy_on_its_first_solve():
    """After the registry imported the Gavel LPs without scipy, HiGHS and Clarabel solves
    still work in that interpreter: two equal jobs on one GPU get half of it each."""
    code = (
        "import sys, numpy as np, dlsched.policies\n"
        "dlsched.policies.get('max_min_fairness')\n"
        "assert 'scipy' not in sys.modules\n"
        "from dlsched.policies.gavel import lp\n"
        "problem = lp.Problem.build([[1.0], [1.0]], [1, 1], [1])\n"
        "for solver in ('highs', 'CLARABEL'):\n"
        "    x = lp.max_min_fairness(problem, solver=solver)\n"
        "    assert np.allclose(x, [[0.5], [0.5]], atol=1e-6), (solver, x)\n"
        "assert 'scipy' in sys.modules\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
