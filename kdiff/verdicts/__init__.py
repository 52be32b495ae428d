"""One kernel judged by its native check and the gates, and the store of verdicts."""
