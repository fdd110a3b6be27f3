"""A job as the web process and a solver process pass it: its kind, the service's limits, its
result and the exception that stops it. Apart from service/processes/solve_job.py, which imports
every solver: the web process needs these and none of the solvers, so it starts without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from stickyd.models.fallback_cause import FallbackCause

Kind = Literal["consumer", "streams"]

CANCEL_SLOT = 8
"""Bytes of the shared page holding the id of the job the web process wants stopped."""


@dataclass(frozen=True)
class Limits:
    max_partitions: int
    max_members: int
    default_time_limit_ms: int
    max_time_limit_ms: int
    max_subscriptions: int = 2_000_000
    max_task_replicas: int = 1_000_000
    max_subtopology_clients: int = 1_000_000
    floor_scale: float = 1.0


class JobCancelled(BaseException):
    """Raised inside a solver process when the web process stops its job (the client went away
    or the deadline passed). A BaseException, so that no solver's catch-all turns it into a
    fallback answer."""


@dataclass(frozen=True)
class JobResult:
    status: int
    body: bytes
    strategy: str = "-"
    solver: str = "-"
    optimal: bool = False
    fallback: bool = False
    solve_ms: float = 0.0
    fallback_cause: FallbackCause | None = None
    """why the fallback answered (None when it did not): the metrics' label."""
    partitions: int = 0
    members: int = 0


def error(status: int, field: str, reason: str, partitions: int = 0, members: int = 0) -> JobResult:
    detail = f"{field}: {reason}" if field else reason
    body = json.dumps({"detail": detail, "field": field, "reason": reason}).encode()
    return JobResult(status=status, body=body, partitions=partitions, members=members)
