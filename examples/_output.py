"""Where the examples write: the folder given as the first argument, else
``$DLSCHED_EXAMPLES_OUT``, else ``build/examples`` in the working directory (ignored by git)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def output_folder() -> Path:
    """The folder this example writes its figure and table into (created if needed)."""
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DLSCHED_EXAMPLES_OUT")
    folder = Path(given or "build/examples")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
