"""Every simulation in the test suite runs with the invariant auditor on."""

import os

os.environ.setdefault("DLSCHED_AUDIT", "1")
