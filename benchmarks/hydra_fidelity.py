"""Hydra and its baselines against the authors' published runs (Yang et al., IEEE TC 2023):
a thin wrapper over `dlsched reproduce hydra` (see `dlsched.reproduce.hydra` for the rows,
their settings and tolerances).

    dlsched reproduce hydra [--quick] [--workers N]
    python benchmarks/hydra_fidelity.py [same options]
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from dlsched.cli import main

    sys.exit(main(["reproduce", "hydra", *sys.argv[1:]]))
