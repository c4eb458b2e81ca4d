"""Run every example and build the gallery page from what it writes (mkdocs-gen-files).

Each script in examples/ runs in its own process on bundled data, into a temporary folder;
its figure, its table and its source go into the page, so the gallery shows what the code
does today. A failing example fails the docs build.
"""

from __future__ import annotations

import ast
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _number(text: str) -> str:
    """A table cell: one decimal for large values, two for small ones (0.02 h, not 0.0)."""
    if not text:
        return ""
    value = float(text)
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _table(path: Path) -> str:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    for row in rows[1:]:
        cells = [row[0]] + [_number(v) for v in row[1:]]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


scripts = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
with tempfile.TemporaryDirectory() as folder, mkdocs_gen_files.open("gallery.md", "w") as page:
    page.write("# Gallery\n\n")
    page.write(
        "Every script in `examples/` ran while this site was built, on the bundled data; "
        "the figures and tables below are what it wrote. Run one yourself with "
        "`python examples/NAME.py OUT` (or set `$DLSCHED_EXAMPLES_OUT`); "
        "`tests/test_examples.py` runs them all.\n\n"
    )
    env = {**os.environ, "MPLBACKEND": "Agg"}
    for script in scripts:
        out = Path(folder) / script.stem
        done = subprocess.run(
            [sys.executable, str(script), str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode:
            raise RuntimeError(f"examples/{script.name} failed:\n{done.stderr}")
        stem = script.stem.replace("_", "-")
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        page.write(f"## `{script.name}`\n\n{doc.split(chr(10) * 2)[0]}\n\n")
        with mkdocs_gen_files.open(f"gallery/{stem}.png", "wb") as image:
            image.write((out / f"{stem}.png").read_bytes())
        page.write(f"![{stem}](gallery/{stem}.png)\n\n")
        page.write(_table(out / f"{stem}.csv") + "\n\n")
        page.write('??? example "The script"\n\n    ```python\n')
        for line in script.read_text().splitlines():
            page.write(f"    {line}\n" if line else "\n")
        page.write("    ```\n\n")
