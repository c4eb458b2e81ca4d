"""Scheduling policies, found by name: `dlsched.policies.get("srtf")`.

Every module (and sub-package) of this package registers its policies when imported. They are
imported on the first lookup (`get`, `names`, `factory`, ...), not with this package, so that
importing `dlsched` or the engine stays cheap and free of import cycles; adding a policy means
adding a module, nothing else.
"""

from dlsched.policies.base import BasePolicy, Policy
from dlsched.policies.registry import (
    POLICIES,
    aliases,
    check_params,
    describe,
    factory,
    get,
    names,
    parameters,
    register,
)

__all__ = [
    "POLICIES",
    "BasePolicy",
    "Policy",
    "aliases",
    "check_params",
    "describe",
    "factory",
    "get",
    "names",
    "parameters",
    "register",
]
