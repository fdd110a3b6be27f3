"""The algorithms. Public entry points: `solve_consumer` and `solve_streams`.

They are loaded on first use, so that a module that only needs the time policy
(`stickyd.solvers.time_policy`), such as the command line's option defaults, does not load
OR-Tools and numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stickyd.solvers.budget import TimeBudget
    from stickyd.solvers.consumer.dispatch import solve_consumer
    from stickyd.solvers.streams.dispatch import solve_streams

__all__ = ["TimeBudget", "solve_consumer", "solve_streams"]

_HOMES = {
    "TimeBudget": "stickyd.solvers.budget",
    "solve_consumer": "stickyd.solvers.consumer.dispatch",
    "solve_streams": "stickyd.solvers.streams.dispatch",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
