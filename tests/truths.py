"""Throughput models for tests: truths simple enough to work answers out by hand."""


class Linear:
    """Truth for the tests: n GPUs of any type run n steps/s (perfect scaling)."""

    name = "linear"

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        return 0.0 if colocated else float(n_gpus)

    def reference_type(self, model):
        return None
