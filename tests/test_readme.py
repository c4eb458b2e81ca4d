"""The README's Python example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs(capsys):
    """The block after the readme-example marker executes and prints one line per policy."""
    text = README.read_text()
    block = re.search(r"<!-- readme-example.*?-->\s*```python\n(.*?)```", text, re.S)
    assert block, "README lost its example block"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, str(README), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["fifo", "sjf", "srtf"]


def test_readme_gives_the_two_setup_commands():
    """The first screen has the replay command and the test command."""
    first_screen = "\n".join(README.read_text().splitlines()[:30])
    assert "pip install -e . && dlsched replay" in first_screen
    assert 'pip install -e ".[test]" && python -m pytest' in first_screen


def test_readme_policy_example_runs(capsys):
    """The 'Writing a policy' example registers, runs and finishes every job."""
    from dlsched.policies.registry import POLICIES

    block = re.search(r"<!-- policy-example.*?-->\s*```python\n(.*?)```", README.read_text(), re.S)
    assert block, "README lost its policy example"
    assert len(block.group(1).strip().splitlines()) <= 45
    namespace: dict[str, object] = {}
    try:
        exec(compile(block.group(1), str(README), "exec"), namespace)
    finally:
        POLICIES._entries.pop("fewest-gpus-first", None)
    assert capsys.readouterr().out.startswith("fewest-gpus-first avg JCT")
    result = namespace["result"]
    assert result.summary()["jobs_completed"] == 60  # type: ignore[attr-defined]
