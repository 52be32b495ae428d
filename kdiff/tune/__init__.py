"""`kdiff tune`: a contract-gated autotuner of a Triton kernel's launch settings (docs/tune.md).
Every configuration timed is judged by kdiff's gates first; the result lists the fast and
wrong ones."""
