"""The HTTP service: its edge, the solver processes, admission and cost, and group state."""
