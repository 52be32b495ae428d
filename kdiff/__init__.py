"""kdiff: judge GPU kernels twice (the benchmark's own check, and twelve adversarial gates
against a float64 oracle) and tabulate where the two disagree."""

__version__ = "0.1.0"
