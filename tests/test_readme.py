"""The README's Python example runs as written, and so does the policy tutorial's first."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
POLICY_TUTORIAL = ROOT / "docs" / "tutorials" / "write-a-policy.md"


def test_readme_example_runs(capsys):
    """The block after the readme-example marker executes and prints one line per policy."""
    text = README.read_text()
    marker = r"<!-- readme-example.*?-->\s*(?:<!--.*?-->\s*)?"  # then the docs' include marker
    block = re.search(marker + r"```python\n(.*?)```", text, re.S)
    assert block, "README lost its example block"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, str(README), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["fifo", "sjf", "srtf"]
    assert len({line.split()[3] for line in lines}) == 3, "the policies must differ: " + str(lines)


def test_readme_shows_the_output_of_its_example(capsys):
    """The output printed under the example is what the example prints today."""
    text = README.read_text()
    found = re.search(r"<!-- readme-example.*?```python\n(.*?)```\s*```text\n(.*?)```", text, re.S)
    assert found, "README lost the output block after its example"
    exec(compile(found.group(1), str(README), "exec"), {})
    assert capsys.readouterr().out == found.group(2)


def test_readme_gives_the_two_setup_commands():
    """The first screen has the replay command and the test command."""
    first_screen = "\n".join(README.read_text().splitlines()[:30])
    assert "pip install -e . && dlsched replay" in first_screen
    assert 'pip install -e ".[test]" && python -m pytest' in first_screen


def test_readme_counts_match_the_registries():
    """The feature table's counts of policies, formats, clusters and reproductions hold."""
    from dlsched import catalogue
    from dlsched.reproduce import REPRODUCTIONS
    from dlsched.traces import LOADERS

    text = README.read_text()
    # dlsched's own policies: other tests of this process may have registered their own
    built_in = [p for p in catalogue.policies() if p.module.startswith("dlsched.")]
    assert f"{len(built_in)} registered" in text
    assert f"{len(LOADERS.names())} formats" in text
    assert f"{len(catalogue.bundled_clusters())} bundled" in text
    assert f"{len(REPRODUCTIONS.names())} registered reproductions" in text
    index = (README.parent / "docs" / "index.md").read_text()  # the site's front page
    counts = (
        f"{len(built_in)} registered policies, {len(LOADERS.names())} trace "
        f"formats, {len(catalogue.bundled_clusters())} bundled"
    )
    assert counts in " ".join(index.split())


def test_tutorial_policy_example_runs(capsys):
    """The first example of the "write a policy" tutorial registers, runs, finishes every job."""
    from dlsched.policies.registry import POLICIES

    text = POLICY_TUTORIAL.read_text()
    block = re.search(r"<!-- policy-example.*?-->\s*```python\n(.*?)```", text, re.S)
    assert block, "the write-a-policy tutorial lost its first example"
    assert len(block.group(1).strip().splitlines()) <= 45
    namespace: dict[str, object] = {}
    try:
        exec(compile(block.group(1), str(POLICY_TUTORIAL), "exec"), namespace)
    finally:
        POLICIES._entries.pop("fewest_gpus_first", None)
    assert capsys.readouterr().out.startswith("fewest_gpus_first avg JCT")
    result = namespace["result"]
    assert result.summary()["jobs_completed"] == 60  # type: ignore[attr-defined]


def test_every_reproduction_has_a_row_in_the_readme_and_the_recorded_table():
    """The README's fidelity table and the docs' recorded snapshot list every registered
    reproduction, with the same rows (a new reproduction without its row fails here)."""
    from dlsched.reproduce import REPRODUCTIONS

    def rows(text: str) -> dict[str, str]:
        found = (re.match(r"\|\s*`([^`]+)`", line) for line in text.splitlines())
        return {m.group(1): m.string for m in found if m}

    readme = README.read_text().split("## Fidelity", 1)
    assert len(readme) == 2, "README lost its Fidelity section"
    in_readme = rows(readme[1].split("\n## ", 1)[0])
    recorded = rows((ROOT / "docs" / "data" / "fidelity-table.md").read_text())
    assert sorted(in_readme) == sorted(REPRODUCTIONS.names())
    assert in_readme == recorded
