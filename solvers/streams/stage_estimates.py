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

FLOW_S_PER_TASK = 10e-6
FLOW_S_PER_TASK_CLIENT = 0.012e-6
FLOW_S_PER_CLIENT_PAIR = 0.6e-6
"""the two flows and the certificate, measured 2026-11-24 (CPU, one core, after the active
network was built in one block and solved level by level where its weighted sum would overflow):
0.07 s at 10k tasks x 100 clients, 0.14 s at 20k x 200, 0.57 s at 10k x 1,000, 0.56 s at 20k x
1,000, 1.04 s at 50k x 1,000, 1.65 s at 100k x 1,000, 3.2 s at 200k x 1,000 (proven optimal
there; it used to be skipped). The tasks' classes and arcs grow with the tasks, the
per-(subtopology, client) nodes with both, the standby pools (one arc per owner and client)
with the clients squared; the figures are 1.4 to 1.9 times these."""
STICKY_S_PER_TASK = 16e-6
"""the sticky heuristic: measured 7-15 us per task from 2k to 200k tasks."""
ANSWER_S_FIXED = 0.01
ANSWER_S_PER_TASK = 3e-6
"""the answer after the sticky heuristic or the quick fill: KIP-441 warm-ups, stats, the response
written as JSON (measured 2.5-2.9 us per task at 10k and 200k tasks)."""


def flows_s(index: StreamsIndex) -> float:
    """The optimal stages (both flows and the proof of a typical answer)."""
    tasks, clients = index.task_count, index.client_count
    return FLOW_S_PER_TASK * tasks + FLOW_S_PER_TASK_CLIENT * tasks * clients + FLOW_S_PER_CLIENT_PAIR * clients**2


def sticky_s(index: StreamsIndex) -> float:
    return STICKY_S_PER_TASK * index.task_count


def answer_s(index: StreamsIndex) -> float:
    """Time kept back, after a target is found, to answer with it."""
    return ANSWER_S_FIXED + ANSWER_S_PER_TASK * index.task_count


def skipped(stage: str, estimate_s: float, left_s: float, index: StreamsIndex, of: str) -> str:
    """Why `stage` did not start (a warning; "time limit" in `of` marks the cause for the metrics)."""
    return (
        f"{stage} skipped: estimated {estimate_s * 1000:.0f} ms for {index.task_count} tasks x "
        f"{index.client_count} clients, {left_s * 1000:.0f} ms left of {of}"
    )
