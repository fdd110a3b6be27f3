"""The algorithms. Public entry points: `solve_consumer` and `solve_streams`."""

from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.dispatch import solve_consumer
from stickyd.solvers.streams.dispatch import solve_streams

__all__ = ["TimeBudget", "solve_consumer", "solve_streams"]
