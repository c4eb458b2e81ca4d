"""Where `dlsched reproduce` finds the shared data: beside the repository in a source checkout,
beside the working directory, or where ``--shared`` / ``$DLSCHED_SHARED`` says; and, when it
finds none, an error that names ``--shared`` (an installed package has no repository around
it, so "beside the repository" means nothing there).

An installed wheel is imitated by pointing `dlsched.bundled` at a package folder that holds
``_bundled/`` (what the wheel's force-include puts there) and no ``pyproject.toml`` above it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dlsched
from dlsched import bundled
from dlsched.cli import main
from dlsched.reproduce import shared_folder
from dlsched.reproduce.base import SHARED_ENV, shared_candidates


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """dlsched as a wheel installs it (``site-packages/dlsched/_bundled``), run from
    ``tmp_path/work`` with no ``../shared`` and no ``$DLSCHED_SHARED``; returns the work
    folder."""
    package = tmp_path / "venv" / "site-packages" / "dlsched"
    (package / "_bundled").mkdir(parents=True)
    monkeypatch.setattr(bundled, "_PACKAGE", package)
    monkeypatch.delenv(SHARED_ENV, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_a_source_checkout_is_the_repository_holding_the_package():
    """Run from src/ (as the tests are), the checkout is the folder with pyproject.toml."""
    checkout = bundled.source_checkout()
    assert checkout == Path(dlsched.__file__).resolve().parents[2]
    assert checkout is not None and (checkout / "pyproject.toml").is_file()


def test_an_installed_package_has_no_source_checkout(installed):
    """A package folder with ``_bundled`` inside is a wheel's: no repository around it."""
    assert bundled.source_checkout() is None


def test_a_package_without_a_pyproject_above_it_has_no_source_checkout(tmp_path, monkeypatch):
    """Even without ``_bundled``, a package with no pyproject.toml two levels up is no
    checkout (nothing is looked for beside a site-packages folder)."""
    monkeypatch.setattr(bundled, "_PACKAGE", tmp_path / "lib" / "dlsched")
    assert bundled.source_checkout() is None


def test_installed_looks_only_beside_the_working_directory(installed):
    """Installed, the one default place is ../shared beside the working directory."""
    assert shared_candidates() == [installed.parent / "shared"]


def test_installed_finds_shared_beside_the_working_directory(installed):
    """Installed, ../shared beside the working directory is found."""
    (installed.parent / "shared").mkdir()
    assert shared_folder() == installed.parent / "shared"


def test_the_environment_variable_wins_over_the_default(installed, tmp_path, monkeypatch):
    """$DLSCHED_SHARED names the folder, even when ../shared exists."""
    (installed.parent / "shared").mkdir()
    monkeypatch.setenv(SHARED_ENV, str(tmp_path / "elsewhere"))
    assert shared_folder() == tmp_path / "elsewhere"


def test_installed_without_shared_data_says_to_name_it_with_shared(installed, capsys):
    """Installed, with no shared folder anywhere: one error line that says the package is
    installed and names --shared, and does not send the user "beside the repository"."""
    assert main(["reproduce", "tiresias", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "installed package" in err and "--shared DIR" in err and SHARED_ENV in err
    assert "beside the repository" not in err
    assert str(installed.parent / "shared") in err  # where it looked


def test_a_shared_option_that_is_no_folder_says_so(installed, tmp_path, capsys):
    """--shared naming a folder that does not exist: the error says it is not a folder."""
    missing = tmp_path / "no-such-folder"
    assert main(["reproduce", "tiresias", "--quick", "--shared", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing} is not a folder" in err and "--shared DIR" in err


def test_a_checkout_without_shared_data_says_where_to_put_it(tmp_path, monkeypatch, capsys):
    """In a checkout with no ../shared anywhere: put it beside the repository, or --shared."""
    root = tmp_path / "repo"
    (root / "src" / "dlsched").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    monkeypatch.setattr(bundled, "_PACKAGE", root / "src" / "dlsched")
    monkeypatch.delenv(SHARED_ENV, raising=False)
    monkeypatch.chdir(root)
    assert shared_folder() == tmp_path / "shared"
    assert main(["reproduce", "tiresias", "--quick"]) == 2
    err = capsys.readouterr().err
    assert f"beside the repository ({tmp_path / 'shared'})" in err and "--shared DIR" in err
