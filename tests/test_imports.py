"""Imports: every module imports alone in a fresh interpreter (no cycle, no import-order luck),
and `import dlsched` stays cheap: heavy libraries and plug-in modules load on first use."""

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import dlsched
from dlsched.registry import Registry


def _modules() -> list[str]:
    found = pkgutil.walk_packages(dlsched.__path__, prefix="dlsched.")
    return sorted(["dlsched", *(m.name for m in found)])


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow  # one interpreter per module: 21 s
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


# Issue 16, target 4: `import dlsched` is cheap; these libraries load on first use only.
HEAVY = ("pandas", "scipy", "matplotlib", "dask", "pyarrow")


def test_importing_the_package_loads_no_heavy_library():
    """`import dlsched` in a fresh interpreter imports none of pandas, scipy, matplotlib, dask,
    pyarrow."""
    code = (
        "import sys, dlsched\n"
        f"loaded = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_every_public_name_resolves_from_a_bare_import():
    """Each name of `dlsched.__all__` imports by `from dlsched import X`, is listed by `dir`,
    and is the object its defining module holds."""
    code = (
        "import dlsched\n"
        "for name in dlsched.__all__:\n"
        "    exec(f'from dlsched import {name}')\n"
        "    assert name in dir(dlsched), name\n"
        "from dlsched.api import simulate\n"
        "from dlsched.cluster import Cluster, load_cluster\n"
        "from dlsched.metrics import SimulationResult\n"
        "from dlsched.traces import Workload, load_trace\n"
        "assert dlsched.simulate is simulate and dlsched.Cluster is Cluster\n"
        "assert dlsched.load_cluster is load_cluster and dlsched.load_trace is load_trace\n"
        "assert dlsched.SimulationResult is SimulationResult and dlsched.Workload is Workload\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_the_sub_packages_resolve_on_first_use():
    """After a bare `import dlsched`, `dlsched.policies` (and the other sub-packages it used to
    bring in) work as attributes and are listed by `dir`."""
    code = (
        "import sys, dlsched\n"
        "assert 'dlsched.policies' not in sys.modules\n"
        "assert 'fifo' in dlsched.policies.names()\n"
        "for name in ('api', 'cluster', 'engine', 'perf', 'policies', 'registry', 'traces'):\n"
        "    assert name in dir(dlsched), name\n"
        "    assert getattr(dlsched, name) is sys.modules[f'dlsched.{name}'], name\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_an_unknown_attribute_is_an_attribute_error():
    """`dlsched.no_such_name` raises AttributeError naming it (so `hasattr` answers False)."""
    with pytest.raises(AttributeError, match="no_such_name"):
        dlsched.no_such_name  # noqa: B018
    assert not hasattr(dlsched, "simulat")


def test_a_lazy_registry_entry_is_listed_before_it_is_imported(tmp_path, monkeypatch):
    """`Registry.add_lazy` lists and answers `in` without importing; `get` imports it once."""
    (tmp_path / "lazy_entry_module.py").write_text("VALUE = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_entry_module", raising=False)
    colours = Registry("colour")
    colours.add_lazy("deferred", "lazy_entry_module:VALUE")
    assert colours.names() == ["deferred"] and "deferred" in colours
    assert "lazy_entry_module" not in sys.modules
    value = colours.get("deferred")
    assert value is sys.modules["lazy_entry_module"].VALUE
    assert colours.get("deferred") is value


def test_a_lazy_registry_entry_clashes_like_any_other():
    """A name declared lazily cannot be taken by another object or target; its own object
    registered under it is a no-op."""
    names = Registry("function")
    names.add_lazy("dumps", "json:dumps")
    names.add_lazy("dumps", "json:dumps")  # the same declaration twice: fine
    with pytest.raises(ValueError, match="json.dumps"):
        names.add("dumps", repr)
    with pytest.raises(ValueError, match="already registered"):
        names.add_lazy("dumps", "json:loads")
    with pytest.raises(ValueError, match="module:attribute"):
        names.add_lazy("loads", "json.loads")
    assert names.add("dumps", json.dumps) is json.dumps
    assert names.get("dumps") is json.dumps


def test_trace_formats_are_known_without_pandas():
    """`dlsched.traces.LOADERS` lists every built-in format without importing pandas or a
    loader; a format's loader is imported on its first lookup."""
    code = (
        "import sys\n"
        "from dlsched.traces import LOADERS\n"
        "assert 'philly' in LOADERS and len(LOADERS.names()) >= 11\n"
        "assert 'pandas' not in sys.modules and 'dlsched.traces.philly' not in sys.modules\n"
        "from dlsched.traces import philly\n"
        "assert LOADERS.get('philly') is philly.load\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_every_built_in_format_is_declared_under_its_modules_name():
    """Each lazily declared trace format is the `FORMAT` of the module whose `load` it names."""
    from dlsched.traces import _BUILTIN_FORMATS, LOADERS

    for name, module_name in _BUILTIN_FORMATS.items():
        module = importlib.import_module(f"dlsched.traces.{module_name}")
        assert module.FORMAT == name
        assert LOADERS.get(name) is module.load


_CLI_HELP = (
    "import contextlib, io, sys\n"
    "from dlsched.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    main(['--help'])\n"
    "print(' '.join(m for m in {heavy!r} if m in sys.modules))\n"
)


def test_the_cli_help_loads_no_scipy_matplotlib_or_dask():
    """`dlsched --help` imports none of scipy, matplotlib, dask: they wait for a run."""
    result = _run(_CLI_HELP.format(heavy=("scipy", "matplotlib", "dask")))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_the_cli_help_loads_no_pandas():
    """`dlsched --help` imports neither pandas nor pyarrow."""
    result = _run(_CLI_HELP.format(heavy=("pandas", "pyarrow")))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
