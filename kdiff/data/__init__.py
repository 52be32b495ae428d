"""What the layers pass around: cases, verdicts and problems, and the small readers and caches they share."""
