"""Scheduling policies, found by name: `dlsched.policies.get("srtf")`.

Every module (and sub-package) of this package registers its policies when imported; they
are all imported here, so adding a policy means adding a module, nothing else.
"""

import importlib
import pkgutil

from dlsched.policies.base import BasePolicy, Policy
from dlsched.policies.registry import describe, get, names, register

for _module in sorted(
    pkgutil.walk_packages(__path__, prefix=f"{__name__}.", onerror=lambda name: None),
    key=lambda m: m.name,
):
    importlib.import_module(_module.name)

__all__ = ["BasePolicy", "Policy", "describe", "get", "names", "register"]
