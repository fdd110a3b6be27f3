"""The floor: what merely reading, parsing and answering a request of a given size costs, below
which no time limit can be kept.

A request whose time limit is below its floor has the limit raised to the floor (and says so in
`warnings`): the promise is max(time_limit_ms, floor) + STICKYD_RESPONSE_MARGIN_MS. Measured with
`python -m bench.limits --floor` (bench/RESULTS.md, "Floor per size"): a request alone with
time_limit_ms 1, which the service answers with its cheapest valid answer, on the 2-core machine
the benchmarks run on: about 1.5 times the CPU time it costs the service's processes (Streams:
fitted to the 200k and 500k classes). Consumer groups (2026-11-23, after the cheaper cheapest
answer and the memory file): 1.6 times the warm CPU time of the 1M class (0.81 s) and about the
CPU time of a solver process's first large job (1.42 s: its memory is not yet faulted in), 1.2
times the 100k class's (0.11 s); the body's size matters little there (a 32 MB equal-subscription
body of 1M partitions costs no more than the 11.7 MB Kafka-like one), the partitions do. Up to
FREE_UNITS partitions or tasks (and a body that such a request can have) the floor is 0: the
margin covers it.
"""

from __future__ import annotations

from typing import Literal

from stickyd.solvers.time_policy import (
    CHEAPEST_MS_PER_BODY_MB,
    FREE_BYTES,
    FREE_UNITS,
    MS_PER_BODY_MB,
    MS_PER_MB,
    MS_PER_UNIT,
)

Kind = Literal["consumer", "streams"]


def floor_ms(kind: Kind, units: int, body_bytes: int, scale: float = 1.0) -> int:
    """The floor of a request of `units` partitions or tasks sent as `body_bytes` bytes, times
    `scale` (STICKYD_FLOOR_SCALE: 0 turns the floor off, more than 1 suits a slower machine)."""
    if units <= FREE_UNITS and body_bytes <= FREE_BYTES:
        return 0
    return round(scale * (MS_PER_MB[kind] * body_bytes / 1e6 + MS_PER_UNIT[kind] * units))


def floor_estimate_ms(kind: Kind, body_bytes: int, scale: float = 1.0) -> int:
    """The floor of a body of `body_bytes` bytes, estimated from its size alone (no free part):
    the deadline the web process counts with until a solver process has parsed the request and
    reports the real one."""
    return round(scale * MS_PER_BODY_MB[kind] * body_bytes / 1e6)


def answer_cost_ms(kind: Kind, body_bytes: int, scale: float = 1.0) -> int:
    """What the cheapest answer to a body of `body_bytes` costs a solver process (parsing,
    indexing, the quick fill, writing it), estimated from the size alone, with no free part: how
    long before its deadline a queued request must start, and how long the guard waits for a late
    solver process's own quick fill rather than parse the body again in the fallback pool."""
    return round(scale * CHEAPEST_MS_PER_BODY_MB[kind] * body_bytes / 1e6)
