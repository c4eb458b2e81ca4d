"""Start-up cost of `import dlsched` and of the `dlsched` command (issue 16, target 4).

Each figure comes from fresh interpreters (a module imported once is free the second time),
best of ``--repeat`` (a shared machine is noisy):

- the total that ``python -X importtime -c "import dlsched"`` reports for ``dlsched``
  (issue 16's target: under 0.25 s);
- CPU seconds (user + system, of the child process) of ``python -c "import dlsched"``, of
  ``python -c "pass"`` (the interpreter alone), and the difference: what dlsched adds;
- the same for ``dlsched --help``, ``dlsched replay --help`` and ``dlsched policies`` (the
  console script's own code, run as ``python -c``);
- which heavy libraries each of these leaves in ``sys.modules`` (what it still pays for).

Run from the repository root, in the environment where dlsched is installed:

    python benchmarks/import_time.py [--repeat 5]

Exits 1 if the `import dlsched` total is over the target, so that CI can run it.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys

#: Issue 16, target 4: seconds that ``-X importtime`` may report for ``import dlsched``.
TARGET_S = 0.25
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "matplotlib", "dask", "simpy", "yaml", "tqdm")

_CLI = "import sys; from dlsched.cli import main; sys.argv[0] = 'dlsched'; sys.exit(main({}))"
COMMANDS = {
    "python -c pass": "pass",
    "import dlsched": "import dlsched",
    "dlsched --help": _CLI.format("['--help']"),
    "dlsched replay --help": _CLI.format("['replay', '--help']"),
    "dlsched policies": _CLI.format("['policies']"),
}

_IMPORTTIME = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| dlsched$")


def _child_cpu_s(argv: list[str]) -> float:
    """User + system CPU seconds of running `argv` to its end (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def importtime_total_s() -> float:
    """Seconds ``-X importtime`` reports for ``import dlsched`` (inclusive), one fresh run."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import dlsched"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in reversed(done.stderr.splitlines()):
        found = _IMPORTTIME.search(line)
        if found:
            return int(found.group(1)) / 1e6
    raise RuntimeError("-X importtime printed no line for dlsched")


def heavy_modules(code: str) -> list[str]:
    """The libraries of `HEAVY` that running `code` leaves imported."""
    probe = (
        "import atexit, sys\n"
        f"atexit.register(lambda: sys.__stderr__.write('LOADED ' + ' '.join("
        f"m for m in {HEAVY!r} if m in sys.modules) + '\\n'))\n"
        f"{code}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    for line in done.stderr.splitlines():
        if line.startswith("LOADED"):
            return line.split()[1:]
    raise RuntimeError(f"the probe printed nothing: {done.stderr.strip()[-300:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh runs per figure (best)")
    args = parser.parse_args()
    os.environ.pop("PYTHONPROFILEIMPORTTIME", None)

    total_s = min(importtime_total_s() for _ in range(args.repeat))
    print(f"python -X importtime -c 'import dlsched': {total_s:.3f} s (target < {TARGET_S} s)")
    print()
    cpu = {
        label: min(_child_cpu_s([sys.executable, "-c", code]) for _ in range(args.repeat))
        for label, code in COMMANDS.items()
    }
    bare = cpu["python -c pass"]
    width = max(len(label) for label in COMMANDS)
    print(f"{'command':<{width}}  {'CPU s':>6}  {'over python':>11}  heavy modules loaded")
    for label, code in COMMANDS.items():
        loaded = " ".join(heavy_modules(code)) or "-"
        print(f"{label:<{width}}  {cpu[label]:6.3f}  {cpu[label] - bare:11.3f}  {loaded}")
    if total_s >= TARGET_S:
        print(f"\nimport dlsched: {total_s:.3f} s is over the target of {TARGET_S} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
