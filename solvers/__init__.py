"""The algorithms. Public entry points: `solve_consumer` and `solve_streams`."""

from solvers.budget import TimeBudget
from solvers.consumer_dispatch import solve_consumer
from solvers.streams_dispatch import solve_streams

__all__ = ["TimeBudget", "solve_consumer", "solve_streams"]
