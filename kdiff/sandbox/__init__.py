"""The candidate's process: a confined worker, its protocol, and what it records about a call."""
