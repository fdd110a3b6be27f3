"""What a solver reports besides its answer, for both problems: the strategy asked, the solver that
answered, whether every level of the objective is proven, and why the fallback answered if it did."""

from __future__ import annotations

from dataclasses import dataclass

from stickyd.models.fallback_cause import FallbackCause
from stickyd.solvers.errors import InvalidAnswer, SolverFailure, SolveTimeout


@dataclass(frozen=True, kw_only=True)
class Outcome:
    strategy: str
    solver: str
    optimal: bool = False
    """every level of the objective proven (by construction, a flow's certificate or CP-SAT)."""
    fallback_cause: FallbackCause | None = None
    """None: the strategy asked for answered; else why the fallback answered instead."""
    warnings: tuple[str, ...] = ()

    @property
    def fallback(self) -> bool:
        return self.fallback_cause is not None


def cause_of(reason: SolveTimeout | SolverFailure) -> FallbackCause:
    """Why the fallback answers, from what stopped the optimal solver."""
    if isinstance(reason, SolveTimeout):
        return FallbackCause.SOLVER_TIME_LIMIT
    return FallbackCause.INVALID_ANSWER if isinstance(reason, InvalidAnswer) else FallbackCause.SOLVER_ERROR
