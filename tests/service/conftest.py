"""Shared by the service's tests: requests with Kafka-like claims big enough to keep a solver
process busy for a while, one impatient `stickyd serve` for the tests of the guard, the hand-off
and the queue, and a fresh marked `stickyd serve` with one solver process for each test that
kills, stops or starves it (the mark finds every process it started)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stickyd.cli.child_service import ServiceProcess, running_service
from tests.processes import MARK, new_mark

SMALLEST_MARGIN_MS = 30
"""STICKYD_RESPONSE_MARGIN_MS's lower bound: a worker gets 1 ms (the request's limit) plus 10 ms
(the margin less the reply reserve) to answer, so no machine is fast enough for the worker to
answer in time, whatever its solver does (the quick fill answers a spent budget in a few ms)."""


def claimed_problem(
    topics: int, members: int, limit_ms: int, *, strategy: str | None = None, stale_generations: bool = False
) -> dict[str, Any]:
    """`topics` topics of 1,000 partitions; each member reads three topics in four and claims every
    third partition of one topic (with `stale_generations`, every other member's claims are a
    generation behind): receiving, parsing, indexing and solving 50,000 partitions take a solver
    process tens of ms, 200,000 with strategy sticky about half a second."""
    options: dict[str, Any] = {"time_limit_ms": limit_ms}
    if strategy is not None:
        options["strategy"] = strategy
    return {
        "topics": {f"t{i}": 1000 for i in range(topics)},
        "members": [
            {
                "id": f"m{i}",
                "topics": [f"t{j}" for j in range(topics) if (i + j) % 4],
                "owned": {f"t{i % topics}": list(range(0, 1000, 3))},
                "generation": 1 + i % 2 if stale_generations else 1,
            }
            for i in range(members)
        ],
        "options": options,
    }


@pytest.fixture(scope="session")
def impatient_service() -> Iterator[ServiceProcess]:
    """One solver process and one fallback process, the smallest response margin the settings
    allow, and no per-size floor (which would give the tests' large requests their reading time
    and the guard its patience): a request with a 1 ms limit must start at once or not at all,
    and a solve past its guard is handed over at once."""
    env = {
        "STICKYD_WORKERS": "1",
        "STICKYD_FALLBACK_WORKERS": "1",
        "STICKYD_RESPONSE_MARGIN_MS": str(SMALLEST_MARGIN_MS),
        "STICKYD_FLOOR_SCALE": "0",
    }
    with running_service(env) as running:
        yield running


@pytest.fixture
def one_worker_service() -> Iterator[ServiceProcess]:
    """A fresh `stickyd serve` with one solver process, for one test, its processes marked."""
    with running_service({MARK: new_mark(), "STICKYD_WORKERS": "1"}) as running:
        yield running
