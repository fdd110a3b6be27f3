"""Ask stickyd, and if it does not answer (down, slow, an error status), solve in this process.

What runs inside Kafka clients and Spark drivers must never wait on the service: the caller
gets an answer either way, and the error that sent it in-process, to count or log as it likes.
`Outage` does the counting and logging the assignors share: one warning when an outage starts,
one line when the service answers again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from stickyd.client.http import StickydClient
from stickyd.models import ConsumerSolution
from stickyd.models.consumer.weights import LIVE
from stickyd.solvers import solve_consumer


def assign_consumer_or_solve(
    url: str, problem: dict[str, Any], timeout_s: float, fallback_time_limit_ms: int | None = None
) -> tuple[ConsumerSolution, Exception | None]:
    """(the service's answer, None), or (the in-process answer, why the service was not used).

    `fallback_time_limit_ms` replaces the problem's limit for the in-process solve.
    `partition_weights: "live"` is the service's measurement; in-process there is none, so the
    local solve goes without weights (every partition weighs the same).
    """
    try:
        with StickydClient(url, timeout=timeout_s, retries=1) as client:
            return client.assign_consumer(problem), None
    except Exception as error:  # noqa: BLE001 - any failure: the caller must get an answer anyway
        local = problem
        if fallback_time_limit_ms is not None:
            local = {**problem, "options": {**problem.get("options", {}), "time_limit_ms": fallback_time_limit_ms}}
        if local.get("partition_weights") == LIVE:
            local = {k: v for k, v in local.items() if k != "partition_weights"}
        return solve_consumer(local), error


class Outage:
    """Counts in-process fallbacks (`fallbacks`) and logs once per outage. Thread-safe."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.fallbacks = 0
        self.down = False
        self._lock = threading.Lock()

    def ask(
        self, url: str, problem: dict[str, Any], timeout_s: float, fallback_time_limit_ms: int | None = None
    ) -> ConsumerSolution:
        """`assign_consumer_or_solve`, recorded: the answer, from the service or in-process."""
        solution, error = assign_consumer_or_solve(url, problem, timeout_s, fallback_time_limit_ms)
        with self._lock:
            if error is not None:  # the group rebalanced anyway, in-process
                self.fallbacks += 1
                if not self.down:
                    self.log.warning(
                        "stickyd at %s unavailable (%s); assigning in-process until it is back", url, error
                    )
                self.down = True
            elif self.down:
                self.log.info("stickyd at %s answers again", url)
                self.down = False
        return solution
