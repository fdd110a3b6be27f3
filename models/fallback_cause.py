"""Why the fallback answered a request instead of the optimal solver: a label for the service's
metrics and logs, carried beside an answer's stats, never on the wire."""

from __future__ import annotations

from enum import StrEnum


class FallbackCause(StrEnum):
    SERVICE_DEADLINE = "service-deadline"
    """the service's own deadline for the request passed (or its solver process exited, or every
    solver process was busy past the request's start-by): the fallback pool answered."""
    SOLVER_TIME_LIMIT = "solver-time-limit"
    """the optimal solver ran out of its share of the time limit, or was not started because its
    estimate did not fit; or the heuristic itself would have been late (the quick fill answered)."""
    INVALID_ANSWER = "invalid-answer"
    """the optimal solver's answer failed the validator."""
    SOLVER_ERROR = "solver-error"
    """the optimal solver failed for any other reason (a model it could not build or finish, a bug)."""
