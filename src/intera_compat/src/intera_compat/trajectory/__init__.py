"""Time-indexed joint trajectories: storage, sampling, and the client that hands them to the loop."""
