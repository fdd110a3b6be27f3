"""What each Streams stage will cost, estimated from the problem's size before it starts, so that
the dispatcher (solvers/streams/dispatch.py) skips a stage that cannot finish in what is left of
the time limit instead of starting it and giving up halfway (or, in a flow's native solve, which
cannot be interrupted, finishing late).

The figures are CPU seconds measured on the 2-core machine the benchmarks run on (quiet, 2026-11-23,
`bench.limit_cases.streams_problem` layouts: one standby, 70% stateful, caught-up lags), rounded
up, so that an estimate errs towards skipping: a skipped stage costs answer quality (the sticky
heuristic or the quick fill answers), a late one breaks the promise.
"""

from __future__ import annotations

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.time_policy import (
    ANSWER_S_PER_TASK,
    FLOW_S_PER_CLIENT_PAIR,
    FLOW_S_PER_TASK,
    FLOW_S_PER_TASK_CLIENT,
    STICKY_S_PER_TASK,
    STREAMS_ANSWER_S_FIXED,
)


def flows_s(index: StreamsIndex) -> float:
    """The optimal stages (both flows and the proof of a typical answer)."""
    tasks, clients = index.task_count, index.client_count
    return FLOW_S_PER_TASK * tasks + FLOW_S_PER_TASK_CLIENT * tasks * clients + FLOW_S_PER_CLIENT_PAIR * clients**2


def sticky_s(index: StreamsIndex) -> float:
    return STICKY_S_PER_TASK * index.task_count


def answer_s(index: StreamsIndex) -> float:
    """Time kept back, after a target is found, to answer with it."""
    return STREAMS_ANSWER_S_FIXED + ANSWER_S_PER_TASK * index.task_count


def skipped(stage: str, estimate_s: float, left_s: float, index: StreamsIndex, of: str) -> str:
    """Why `stage` did not start (a warning; "time limit" in `of` marks the cause for the metrics)."""
    return (
        f"{stage} skipped: estimated {estimate_s * 1000:.0f} ms for {index.task_count} tasks x "
        f"{index.client_count} clients, {left_s * 1000:.0f} ms left of {of}"
    )
