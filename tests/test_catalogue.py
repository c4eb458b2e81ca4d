"""The catalogue lists what the registries hold, for the generated reference pages."""

from dlsched import catalogue, policies
from dlsched.engine.placement import STRATEGIES
from dlsched.traces import LOADERS


def test_every_registered_policy_is_listed_once():
    """The catalogue names each registered policy once, in the registry's order."""
    assert [entry.name for entry in catalogue.policies()] == policies.names()


def test_policy_entry_has_its_paper_parameters_and_defaults():
    """A policy's entry carries its module docstring and its parameters with defaults."""
    entry = next(p for p in catalogue.policies() if p.name == "tiresias")
    assert "Tiresias" in entry.about and "NSDI" in entry.about
    defaults = {p.name: p.default for p in entry.parameters}
    assert defaults["compat"] == "False"


def test_names_of_one_factory_are_aliases_of_each_other():
    """Two names registered to one class (min_cost and Gavel's long name) say so."""
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
