"""The numerics of judging: the float64 oracle, the tolerance model, input generators and problem sizes."""
