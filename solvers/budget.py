"""A request's time budget, as an object every stage asks how much is left.

The deadline is a point on the system-wide monotonic clock (`time.monotonic()`, CLOCK_MONOTONIC on
Linux), so a budget made where a request arrived means the same instant in a solver process.
Stages take a share of what is left (`share`) and long loops call `check()` so that no solver work
outlives its request (PyVRP's stopping criteria are the model).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from stickyd.solvers.errors import SolveTimeout


@dataclass(frozen=True)
class TimeBudget:
    """Ends at `deadline` (seconds on the monotonic clock)."""

    deadline: float

    @classmethod
    def of_ms(cls, limit_ms: float, *, started: float | None = None) -> TimeBudget:
        """`limit_ms` counted from `started` (a monotonic instant; now when None)."""
        return cls((time.monotonic() if started is None else started) + limit_ms / 1000)

    def left_s(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.deadline - time.monotonic())

    def left_ms(self) -> float:
        return self.left_s() * 1000

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def check(self, what: str = "the solver") -> None:
        """Raise SolveTimeout when the budget is spent (call it inside long loops)."""
        if self.expired():
            raise SolveTimeout(f"{what} ran out of its time limit")

    def share(self, fraction: float) -> TimeBudget:
        """A budget ending after `fraction` of what is left now (the rest is kept for later stages)."""
        now = time.monotonic()
        return TimeBudget(now + max(0.0, self.deadline - now) * fraction)
