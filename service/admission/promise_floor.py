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

Kind = Literal["consumer", "streams"]

FREE_UNITS = 10_000
"""partitions or tasks up to which the floor is 0 (the margin covers reading and answering)."""
FREE_BYTES = 1_000_000
"""body bytes up to which reading and parsing count as free."""
MS_PER_MB: dict[Kind, float] = {"consumer": 10.0, "streams": 67.0}
"""reading and decoding: per MB of body (msgspec/orjson, claims read into columns)."""
MS_PER_UNIT: dict[Kind, float] = {"consumer": 0.00125, "streams": 0.0045}
"""indexing, the cheapest valid answer and writing it: per partition (consumer) or task (Streams)."""
MS_PER_BODY_MB: dict[Kind, float] = {"consumer": 116.0, "streams": 245.0}
"""the whole floor per MB of body, for the web process, which knows only the body's size: the
floor of the benchmarks' largest classes (Kafka-like claims; Streams with one standby) over their
body sizes. The deadline the web process keeps until a solver process reports the real one."""
CHEAPEST_MS_PER_BODY_MB: dict[Kind, float] = {"consumer": 116.0, "streams": 130.0}
"""what the cheapest answer costs a solver process per MB of body (consumer: the floor's figure).
Streams: measured 2026-11-24 00:11 (bench/RESULTS.md "Floor per size") 390 ms of CPU
for the 5.09 MB 200k-task body and 970 ms for the 13.33 MB 500k one (77 and 73 ms per MB), about
1.7 times that: below the Streams floor (about 3 times the CPU alone, kept for 8 requests at
once), so a queued Streams request may wait for a solver process until its floor's deadline less
this cost."""


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
