"""Why an optimal solver gave up; the dispatcher turns these into a fallback answer."""


class SolveTimeout(Exception):
    """The time limit ran out before optimality was proven."""


class SolverFailure(Exception):
    """The solver could not build or finish its model (it says why)."""


class InvalidAnswer(SolverFailure):
    """The solver finished, but its answer failed the validator."""
