"""The version of dlsched, written here and nowhere else (pyproject.toml reads it)."""

__version__ = "0.2.0"
