"""The duration predictors in the catalogue and in the generated reference pages."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

from dlsched import catalogue
from dlsched.predict import PREDICTORS


def test_every_registered_predictor_is_listed_with_its_parameters():
    entries = catalogue.predictors()
    assert [e.name for e in entries] == PREDICTORS.names()
    helios = next(e for e in entries if e.name == "helios")
    assert helios.module == "dlsched.predict.helios" and "SC '21" in helios.about
    assert helios.estimator == "predict:helios"
    names = {p.name: p.default for p in helios.parameters}
    assert names["vc_fallback"] == "False"
    gbdt = next(e for e in entries if e.name == "gbdt")
    assert {p.name for p in gbdt.parameters} >= {"refit_every", "min_train", "fallback"}
    assert all(e.summary and e.about for e in entries)


def test_generated_reference_has_a_predictors_page(tmp_path, monkeypatch):
    """docs/gen_reference.py, with a stand-in for mkdocs-gen-files, writes predictors.md."""

    def opener(name: str, mode: str = "r"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open(mode)

    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", types.SimpleNamespace(open=opener))
    script = Path(__file__).resolve().parent.parent / "docs" / "gen_reference.py"
    runpy.run_path(str(script), run_name="gen_reference")
    page = (tmp_path / "reference" / "predictors.md").read_text()
    for name in PREDICTORS.names():
        assert f"## `{name}`" in page and f"`predict:{name}`" in page
    nav = (Path(__file__).resolve().parent.parent / "mkdocs.yml").read_text()
    assert "reference/predictors.md" in nav
