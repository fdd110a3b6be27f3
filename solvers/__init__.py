"""The algorithms. Public entry points: `solve_consumer` (and `solve_streams`)."""

from solvers.consumer_dispatch import solve_consumer

__all__ = ["solve_consumer"]
