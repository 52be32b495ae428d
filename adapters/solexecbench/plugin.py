"""The SOL-ExecBench adapter (in progress)."""
