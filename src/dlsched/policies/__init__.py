"""Scheduling policies, found by name: `dlsched.policies.get("srtf")`."""

from dlsched.policies import fifo, sjf  # noqa: F401  (registers the built-in policies)
from dlsched.policies.base import BasePolicy, Policy
from dlsched.policies.registry import describe, get, names, register

__all__ = ["BasePolicy", "Policy", "describe", "get", "names", "register"]
