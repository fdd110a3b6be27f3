"""What the kafka-python and aiokafka assignors hold per consumer instance: where and how long to
ask stickyd, the in-process fallback's limit, this member's rack and load settings, what it owns,
the last answer and the outage counter. Each assignor adds its client library's protocol."""

from __future__ import annotations

import logging
import threading

from stickyd.client.fallback import Outage
from stickyd.client.load_settings import LoadSettings, WeightsSource
from stickyd.models import ConsumerSolution
from stickyd.solvers.time_policy import ASSIGNOR_FALLBACK_TIME_LIMIT_MS, ASSIGNOR_TIME_LIMIT_MS, ASSIGNOR_TIMEOUT_MS


class AssignorSettings:
    """Per-instance state (never on the class, so two consumers in one process share nothing); the
    outage is logged under the assignor's own module."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        timeout_ms: int = ASSIGNOR_TIMEOUT_MS,
        strategy: str = "optimal",
        time_limit_ms: int = ASSIGNOR_TIME_LIMIT_MS,
        fallback_time_limit_ms: int = ASSIGNOR_FALLBACK_TIME_LIMIT_MS,
        rack: str | None = None,
        balance: str | None = None,
        load_tolerance: float | None = None,
        partition_weights: WeightsSource = None,
        capacity: int | None = None,
    ) -> None:
        self.url = url
        self.timeout_ms = timeout_ms
        self.strategy = strategy
        self.time_limit_ms = time_limit_ms
        self.fallback_time_limit_ms = fallback_time_limit_ms
        self.rack = rack
        self.load = LoadSettings(balance, load_tolerance, partition_weights, capacity)
        self.owned: dict[str, list[int]] = {}
        """what this member owns (KIP-341), as its last assignment gave it."""
        self.last_solution: ConsumerSolution | None = None
        self.outage = Outage(logging.getLogger(type(self).__module__))
        self._lock = threading.Lock()

    @property
    def fallbacks(self) -> int:
        """Assignments this member made in-process, as group leader, because stickyd did not answer."""
        return self.outage.fallbacks
