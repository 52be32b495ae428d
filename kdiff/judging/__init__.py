"""What gates and adapters judge in: the judging context, the hook specs, plugins and the run configuration."""
