"""The catalogue lists what the registries hold, for the generated reference pages."""

from dlsched import catalogue, policies
from dlsched.engine.placement import STRATEGIES
from dlsched.traces import LOADERS


def test_every_registered_policy_is_listed_once():
    """The catalogue names each registered policy once, by its own name, aliases aside."""
    assert [entry.name for entry in catalogue.policies()] == policies.names(aliases=False)
    entry = next(p for p in catalogue.policies() if p.name == "tiresias_gittins")
    assert entry.aliases == ("tiresias-gittins",)


def test_policy_entry_has_its_paper_parameters_and_defaults():
    """A policy's entry carries its module docstring and its parameters with defaults."""
    entry = next(p for p in catalogue.policies() if p.name == "tiresias")
    assert "Tiresias" in entry.about and "NSDI" in entry.about
    defaults = {p.name: p.default for p in entry.parameters}
    assert defaults["compat"] == "False"


def test_a_policy_lists_its_older_names():
    """min_cost lists Gavel's long name for it as an alias, not as a second policy."""
    entry = next(p for p in catalogue.policies() if p.name == "min_cost")
    assert entry.aliases == ("max_sum_throughput_normalized_by_cost_perf",)


def test_reproductions_found_from_the_code_without_shared_data(tmp_path):
    """Without the shared data, a reproduction's policies come from its code or its name."""
    found = catalogue.policy_reproductions(tmp_path)
    assert "tiresias" in found["tiresias"]
    assert found["optimus"] == ["optimus-pollux"]
    assert found["synergy"] == ["synergy"]


def test_placements_and_trace_formats_follow_their_registries():
    """Every placement and trace format is listed, each with a docstring."""
    assert [e.name for e in catalogue.placements()] == STRATEGIES.names()
    formats = catalogue.trace_formats()
    assert [e.name for e in formats] == LOADERS.names()
    assert all(e.about for e in formats)


def test_bundled_clusters_count_their_gpus():
    """The bundled 8-GPU Tiresias cluster is listed with its 8 P100s on 2 nodes."""
    entry = next(c for c in catalogue.bundled_clusters() if c.name == "tiresias-8")
    assert entry.gpus_by_type == {"P100": 8}
    assert entry.nodes == 2


def _generated_pages(tmp_path, monkeypatch):
    """Run docs/gen_reference.py with a stand-in for mkdocs-gen-files writing to tmp_path."""
    import runpy
    import sys
    import types
    from pathlib import Path

    stand_in = types.ModuleType("mkdocs_gen_files")

    def open_page(name: str, mode: str = "r"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open(mode)

    stand_in.open = open_page  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", stand_in)
    script = Path(__file__).resolve().parent.parent / "docs" / "gen_reference.py"
    runpy.run_path(str(script), run_name="gen_reference")
    return tmp_path / "reference"


def test_generated_catalogue_lists_every_policy_with_its_fidelity(tmp_path, monkeypatch):
    """The docs' policy catalogue has a section per registered policy, with its parameters,
    and the fidelity row of each reproduction that runs it."""
    pages = _generated_pages(tmp_path, monkeypatch)
    text = (pages / "policies.md").read_text()
    for name in policies.names(aliases=False):
        assert f"\n### `{name}`" in text, name
    assert "also answers to `tiresias-gittins`" in text
    tiresias = text.split("\n### `tiresias`")[1].split("\n### ")[0]
    assert "| `compat` |" in tiresias
    assert "| `tiresias`" in tiresias and "Tiresias (NSDI '19)" in tiresias  # its fidelity row


def test_generated_reference_covers_formats_clusters_and_the_cli(tmp_path, monkeypatch):
    """The generated pages list every trace format, bundled cluster and CLI verb."""
    pages = _generated_pages(tmp_path, monkeypatch)
    formats = (pages / "trace-formats.md").read_text()
    assert all(f"## `{name}`" in formats for name in LOADERS.names())
    clusters = (pages / "clusters.md").read_text()
    assert all(f"| `{c.name}` |" in clusters for c in catalogue.bundled_clusters())
    cli = (pages / "cli.md").read_text()
    assert all(f"## `dlsched {verb}`" in cli for verb in ("replay", "run", "report", "reproduce"))
