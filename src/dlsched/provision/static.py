"""`static`: rent nothing; the run uses the fixed nodes only (the baseline of a burst run)."""

from __future__ import annotations

from dlsched.provision.view import NOTHING, Provision, ProvisionView


class Static:
    """Never acquires an instance."""

    name = "static"

    def provision(self, view: ProvisionView) -> Provision:
        """Nothing to acquire or release."""
        return NOTHING

    def __repr__(self) -> str:
        return "Static()"
