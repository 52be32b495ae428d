"""The command line, the pytest plugin and the executors: the top layer."""
