"""Every module imports alone, in a fresh interpreter: no import cycle, no import-order luck."""

import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import dlsched


def _modules() -> list[str]:
    found = pkgutil.walk_packages(dlsched.__path__, prefix="dlsched.")
    return sorted(["dlsched", *(m.name for m in found)])


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


def test_every_module_imports_alone_in_a_fresh_interpreter():
    """`python -c "import dlsched.x.y"` succeeds for every module of the package."""
    modules = _modules()
    assert "dlsched.engine.simulator" in modules and "dlsched.policies.fifo" in modules
    # One interpreter per module; run several at once, they are independent.
    with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1)) as pool:
        results = dict(zip(modules, pool.map(lambda m: _run(f"import {m}"), modules), strict=True))
    failed = {
        name: (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        for name, r in results.items()
        if r.returncode != 0
    }
    assert not failed, f"modules that do not import alone: {failed}"


def test_the_engine_imports_alone():
    """`import dlsched.engine.simulator` works first thing in a fresh interpreter."""
    result = _run("import dlsched.engine.simulator")
    assert result.returncode == 0, result.stderr


def test_importing_the_package_loads_no_policy_module():
    """`import dlsched` and `import dlsched.policies` import no policy module until a lookup."""
    code = (
        "import sys, dlsched, dlsched.policies\n"
        "light = {'dlsched.policies', 'dlsched.policies.base', 'dlsched.policies.registry'}\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('dlsched.policies') "
        "and m not in light)\n"
        "assert not loaded, loaded\n"
        "dlsched.policies.names()\n"
        "assert 'dlsched.policies.fifo' in sys.modules\n"
        "assert 'dlsched.policies.gavel.policies' in sys.modules\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
