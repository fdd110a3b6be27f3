"""Consumer-group benchmark at scale, with previous assignments laid out the way Kafka's own
assignors leave them (bench/layouts.py), each row end to end from a dict, from JSON bytes and
through `stickyd serve` (HTTP), beside kafka-python's StickyPartitionAssignor at 10k x 1k, the
fallback within a 1 s limit, a 1M request with `time_limit_ms: 1000` through the service, and
the peak RSS of the 1M unequal solve.

    python -m bench.consumer                      # 1M x 2,000 and 10k x 1k
    python -m bench.consumer --sizes 10000x1000   # one size
    python -m bench.consumer --no-peer            # without kafka-python

Writes the tables to stdout and into bench/RESULTS.md (section "Consumer groups"), after every row.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.consumer_paths import (
    BENCH_LIMITS,
    fallback_from_dict,
    from_dict,
    from_json_bytes,
    peak_rss,
    through_http,
)
from bench.layouts import EVENTS, LAYOUTS, SHAPES, contract_json_bytes, kafka_like_problem
from bench.results import write_section
from stickyd.cli.child_service import running_service
from stickyd.models import ConsumerProblem, index_consumer_problem

SIZES = [(1_000_000, 2_000), (10_000, 1_000)]
PEER_CAP_S = 120.0
MAIN_LAYOUT = "sticky"
FALLBACK_LIMIT_MS = 1_000
TARGETS = {
    "dict_equal_s": 1.0,
    "dict_unequal_s": 3.0,
    "http_over_dict": 2.0,
    "peer_ratio": 300.0,
    "fallback_s": 1.0,
    "service_1000ms_s": 1.25,
    "rss_gb": 3.0,
}
FLOOR_SCALE = [0.0]
"""the main service's STICKYD_FLOOR_SCALE, also used for the solver process's job timed alone."""
WARMED: list[httpx.Client] = []
"""services whose solver process has had its first large job (`_first_large_jobs`)."""
SMALL_REPEAT = 20
"""rows below 1M take the best of this many runs per column (a 10k job is ~10 ms: one scheduling
hiccup on a shared 2-core machine is as large as the job); 1M rows run once."""
DEFAULT_FLOOR_SCALE = 1.0
"""the 1M `time_limit_ms: 1000` row is also sent to a second service with the default floor."""
PREFAULT_MB = 768
"""and to a third with the default floor whose solver processes touch this much heap at start
(STICKYD_WORKER_PREFAULT_MB): its first large job is the row to compare with the second's."""
ServiceKey = tuple[float, int]
"""a service under test: (STICKYD_FLOOR_SCALE, STICKYD_WORKER_PREFAULT_MB)."""


def _label(key: ServiceKey) -> str:
    scale, prefault_mb = key
    return f"{scale:g}, prefault {prefault_mb} MB" if prefault_mb else f"{scale:g}"


def figures(problem: dict[str, Any], assignment: dict[str, dict[str, list[int]]]) -> dict[str, int]:
    """moves and loads of any assignment, measured the same way for every peer."""
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    position = {m: i for i, m in enumerate(index.members)}
    kept = 0
    loads = np.zeros(index.member_count, dtype=np.int64)
    claims = {g.topics[0]: g.claims[0] for g in index.groups}
    for member, parts in assignment.items():
        m = position[member]
        for topic, partitions in parts.items():
            arr = np.asarray(partitions, dtype=np.int64)
            loads[m] += len(arr)
            kept += int((claims[topic][arr] == m).sum())
    return {"moves": index.owned - kept, "min": int(loads.min()), "max": int(loads.max())}


def _kafka_python_sticky(problem: dict[str, Any], out: Any) -> None:
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    class Cluster:
        def topics(self) -> set[str]:
            return set(problem["topics"])

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            count = problem["topics"].get(topic)
            return None if count is None else set(range(count))

    class Member:
        def __init__(self, m: dict[str, Any]) -> None:
            self.member_id = m["id"]
            owned = m.get("owned")
            data = StickyAssignorUserData(list(owned.items()), m.get("generation", -1)) if owned else b""
            self.metadata = ConsumerProtocolSubscription(0, m["topics"], data)

    members = [Member(m) for m in problem["members"]]
    started = time.perf_counter()
    result = StickyPartitionAssignor().assign(Cluster(), members)
    elapsed = time.perf_counter() - started
    assignment: dict[str, dict[str, list[int]]] = {}
    for member_id, answer in result.items():
        assignment[member_id] = {topic: sorted(ps) for topic, ps in answer.assigned_partitions}
    out.put((elapsed, assignment))


def run_peer(problem: dict[str, Any]) -> tuple[float, dict[str, Any]] | None:
    """kafka-python's sticky assignor in a child process, capped at PEER_CAP_S."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_kafka_python_sticky, args=(problem, out))
    child.start()
    deadline = time.monotonic() + PEER_CAP_S
    try:
        while time.monotonic() < deadline:
            try:
                return out.get(timeout=0.5)
            except queue.Empty:
                if not child.is_alive() and out.empty():
                    raise RuntimeError("kafka-python's assignor crashed") from None
        return None
    finally:
        child.kill()
        child.join()


def cases(partitions: int, others: bool = True) -> list[tuple[str, str, str]]:
    """(layout, shape, event): Kafka's sticky layout for every event, the other layouts
    (contiguous, round robin, range, stale claims and dead members) after a member leaves."""
    main = [(MAIN_LAYOUT, shape, event) for shape in SHAPES for event in EVENTS]
    if not others:
        return main
    return main + [(layout, shape, "leave") for layout in LAYOUTS if layout != MAIN_LAYOUT for shape in SHAPES]


class Report:
    """The tables, rewritten into RESULTS.md after every row so that a long run leaves its rows."""

    def __init__(self, note: str, section: str = "Consumer groups") -> None:
        self.note = note
        self.section = section
        self.load_before = os.getloadavg()
        self.rows: list[str] = []
        self.fallback_rows: list[str] = []
        self.service_rows: list[str] = []
        self.memory_rows: list[str] = []
        self.misses: list[str] = []

    def miss(self, what: str) -> None:
        self.misses.append(what)
        print(f"MISS: {what}", flush=True)

    def write(self) -> None:
        load = ", ".join(f"{x:.1f}" for x in self.load_before)
        after = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        body = [
            f"Load average {load} when the run started, {after} at the last row. Times are wall clock, "
            "with this process's CPU time in brackets where the work ran in it (dict, JSON bytes, "
            f"fallback); on a busy machine the wall times are upper bounds of an idle one's. {self.note}",
            "",
            "Previous assignments as Kafka's own assignors leave them (`bench/layouts.py`: `sticky` is "
            "round robin, then members leaving and joining KIP-54 style, then 3% shuffled claims; "
            "`stale-dead` adds stale generations, tied claims and dead members). Each row is one "
            "request, timed end to end: **dict** = `solve_consumer(dict)` -> `ConsumerSolution`; "
            "**JSON bytes** = a solver process's job "
            "(`stickyd.service.processes.solve_job.run_job`: bytes in, parse, solve, "
            "answer bytes out); **HTTP** = POST of the bytes to `stickyd serve` (one solver process) "
            "on loopback until the answer is read. kafka-python 3's StickyPartitionAssignor runs on the "
            f"same group in a child process, capped at {PEER_CAP_S:.0f} s. Rows below 1M are the best of "
            f"{SMALL_REPEAT} runs per column; 1M rows run once.",
            "",
            "Targets: 1M x 2,000 from a dict <= 1.0 s equal, <= 3.0 s unequal; HTTP <= 2x "
            "the in-process time; 10k x 1k >= 300x faster than kafka-python; the fallback <= 1.0 s at "
            "1M for every layout; a 1M request with `time_limit_ms: 1000` answered within 1,250 ms "
            "through the service; peak RSS of the 1M unequal solve <= 3 GB.",
            "",
            "| size (P x M) | subscriptions | layout | event | solver | proven | moves | min/max load "
            "| dict s (CPU s) | JSON bytes s (CPU s) | HTTP s | HTTP / dict | kafka-python s | kafka-python / dict |",
            "|---|---|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
            *self.rows,
            "",
            f"The fallback (the dispatcher told to fall back, inside `time_limit_ms: {FALLBACK_LIMIT_MS}`), "
            "from a dict:",
            "",
            "| size (P x M) | subscriptions | layout | event | answered by | time s (CPU s) | moves | min/max load |",
            "|---|---|---|---|---|---:|---:|---|",
            *self.fallback_rows,
            "",
            "A request with `time_limit_ms: 1000` through `stickyd serve` (HTTP, end to end), to a service with "
            "the floor off (`STICKYD_FLOOR_SCALE=0`: the limit is kept, a job past it plus the margin is handed "
            "to the fallback pool), to one with the default floor (1: the limit is raised to the floor for the "
            "body's size, `service/admission/promise_floor.py`) and to one with the default floor "
            "whose solver processes touch "
            f"{PREFAULT_MB} MB of heap when they start (`STICKYD_WORKER_PREFAULT_MB={PREFAULT_MB}`); "
            "the last column is the solver process's job, "
            "`stickyd.service.processes.solve_job.run_job`, on the same bytes in this process with that floor "
            "(what the web process "
            "waits for before the IPC). The rows marked `first large job` are each service's first 1M request "
            "(with `time_limit_ms: 1000`, on the first layout and event), for which its fresh solver process "
            "page-faults its heap in; after it the service answers that request once more with a 600 s limit, so "
            "the HTTP column and the other rows measure warm solver processes:",
            "",
            "| size (P x M) | subscriptions | layout | event | STICKYD_FLOOR_SCALE, prefault | answered by "
            "| proven | fallback | time s | the solver process's job alone, s (CPU s) |",
            "|---|---|---|---|---:|---|---|---|---:|---:|",
            *self.service_rows,
            "",
            *self.memory_rows,
            "",
            "**Misses**: " + ("; ".join(self.misses) if self.misses else "none."),
        ]
        write_section(self.section, "\n".join(body))


def _row(size: str, case: tuple[str, str, str]) -> str:
    layout, shape, event = case
    return f"| {size} | {shape} | {layout} | {event} "


def run_case(
    report: Report,
    clients: dict[ServiceKey, httpx.Client],
    partitions: int,
    members: int,
    case: tuple[str, str, str],
    peer: bool,
) -> None:
    """`clients`: the services under test, the main one (FLOOR_SCALE, no prefault) first."""
    client = clients[(FLOOR_SCALE[0], 0)]
    layout, shape, event = case
    size = f"{partitions:,} x {members:,}"
    big = partitions >= 1_000_000
    problem = kafka_like_problem(partitions, members, layout=layout, shape=shape, event=event)
    problem["options"] = {"time_limit_ms": 600_000}
    body = contract_json_bytes(problem)
    repeat = 1 if big else SMALL_REPEAT
    if big:
        _first_large_jobs(report, clients, size, case, problem, body)
    d = min((from_dict(problem) for _ in range(repeat)), key=lambda t: t.seconds)
    b = min((from_json_bytes(body) for _ in range(repeat)), key=lambda t: t.seconds)
    h = min((through_http(client, body) for _ in range(repeat)), key=lambda t: t.seconds)
    peer_s, ratio = "-", "-"
    if peer:
        answer = run_peer(problem)
        if answer is None:
            peer_s, ratio = f"> {PEER_CAP_S:.0f} (capped)", f"> {PEER_CAP_S / d.seconds:,.0f}x"
        else:
            peer_s, ratio = f"{answer[0]:.2f}", f"{answer[0] / d.seconds:,.0f}x"
            if answer[0] / d.seconds < TARGETS["peer_ratio"]:
                report.miss(f"{size} {shape} {layout} {event}: kafka-python only {answer[0] / d.seconds:.0f}x slower")
    report.rows.append(
        _row(size, case) + f"| {d.solver} | {'yes' if d.optimal else 'no'} | {d.moves} | {d.min_load}/{d.max_load} "
        f"| {d.seconds:.3f} ({d.cpu:.2f}) | {b.seconds:.3f} ({b.cpu:.2f}) | {h.seconds:.3f} "
        f"| {h.seconds / d.seconds:.2f} | {peer_s} | {ratio} |"
    )
    if big:
        limit = TARGETS["dict_equal_s"] if shape == "equal" else TARGETS["dict_unequal_s"]
        if d.seconds > limit:
            report.miss(f"{size} {shape} {layout} {event} from a dict {d.seconds:.2f} s (target {limit:.1f} s)")
        if h.seconds > TARGETS["http_over_dict"] * d.seconds:
            report.miss(f"{size} {shape} {layout} {event} through HTTP {h.seconds / d.seconds:.1f}x the dict time")
    f = fallback_from_dict(problem, FALLBACK_LIMIT_MS)
    report.fallback_rows.append(
        _row(size, case) + f"| {f.solver} | {f.seconds:.3f} ({f.cpu:.2f}) | {f.moves} | {f.min_load}/{f.max_load} |"
    )
    if big and f.seconds > TARGETS["fallback_s"]:
        report.miss(f"{size} {shape} {layout} {event}: the fallback took {f.seconds:.2f} s")
    if big and layout == MAIN_LAYOUT and event == "leave":
        timed = contract_json_bytes({**problem, "options": {"time_limit_ms": FALLBACK_LIMIT_MS}})
        for key, floor_client in clients.items():
            s = through_http(floor_client, timed)
            alone = from_json_bytes(timed, replace(BENCH_LIMITS, floor_scale=key[0]))
            report.service_rows.append(
                _row(size, case) + f"| {_label(key)} | {s.solver} | {'yes' if s.optimal else 'no'} "
                f"| {'yes' if s.fallback else 'no'} | {s.seconds:.3f} | {alone.seconds:.3f} ({alone.cpu:.2f}) |"
            )
            if s.seconds > TARGETS["service_1000ms_s"]:
                report.miss(
                    f"{size} {shape} time_limit_ms 1000 through the service ({_label(key)}) "
                    f"answered in {s.seconds:.2f} s"
                )
        if shape == "unequal":
            _memory(report, problem, size)
    print(report.rows[-1], report.fallback_rows[-1], sep="\n", flush=True)
    report.write()


def _first_large_jobs(
    report: Report,
    clients: dict[ServiceKey, httpx.Client],
    size: str,
    case: tuple[str, str, str],
    problem: dict[str, Any],
    body: bytes,
) -> None:
    """Each service's first large request, with `time_limit_ms: 1000`, as a row of its own: a fresh
    solver process page-faults its heap in (0.2-0.4 s of system CPU at 1M, the kernel clearing
    pages). Then the service answers `body` once more, so that the timed columns and rows measure
    warm solver processes."""
    timed = contract_json_bytes({**problem, "options": {"time_limit_ms": FALLBACK_LIMIT_MS}})
    for key, service in clients.items():
        if service in WARMED:
            continue
        cold = through_http(service, timed)
        proven, fell_back = "yes" if cold.optimal else "no", "yes" if cold.fallback else "no"
        report.service_rows.append(
            _row(size, case) + f"| {_label(key)}, first large job | {cold.solver} | {proven} | {fell_back} "
            f"| {cold.seconds:.3f} | - |"
        )
        if cold.seconds > TARGETS["service_1000ms_s"]:
            report.miss(
                f"{size} {case[1]} time_limit_ms 1000, the first large job of a fresh solver process "
                f"({_label(key)}), answered in {cold.seconds:.2f} s"
            )
        through_http(service, body)
        WARMED.append(service)


def _memory(report: Report, problem: dict[str, Any], size: str) -> None:
    with tempfile.TemporaryDirectory(prefix="stickyd-bench-") as folder:
        path = Path(folder) / "problem.json"
        path.write_bytes(contract_json_bytes(problem))
        rss = peak_rss(path)
    peak_gb, loaded_gb = rss["peak_kb"] / 2**20, rss["loaded_kb"] / 2**20
    report.memory_rows.append(
        f"Peak RSS of the {size} unequal solve ({MAIN_LAYOUT} layout, a member left; a fresh process "
        f"that loads the request as a dict, solves it with `{rss['solver']}` and keeps the answer): "
        f"**{peak_gb:.2f} GB** ({loaded_gb:.2f} GB of it before the solve: the interpreter, "
        f"libraries and the request dict); target <= {TARGETS['rss_gb']:.0f} GB."
    )
    if peak_gb > TARGETS["rss_gb"]:
        report.miss(f"peak RSS {peak_gb:.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(f"{p}x{m}" for p, m in SIZES), help="e.g. 10000x1000")
    parser.add_argument("--no-peer", action="store_true", help="skip kafka-python")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--section", default="Consumer groups", help="the RESULTS.md section to write")
    parser.add_argument("--sticky-only", action="store_true", help="only Kafka's sticky layout (every event)")
    parser.add_argument(
        "--floor-scale", default="0", help="STICKYD_FLOOR_SCALE of the service (0: time limits are not raised)"
    )
    args = parser.parse_args()
    FLOOR_SCALE[0] = float(args.floor_scale)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    report = Report(args.note, args.section)
    env = {
        "STICKYD_WORKERS": "1",
        "STICKYD_MAX_TIME_LIMIT_MS": "600000",
        "STICKYD_LOG_LEVEL": "warning",
    }
    keys: list[ServiceKey] = list(dict.fromkeys([(FLOOR_SCALE[0], 0), (DEFAULT_FLOOR_SCALE, 0)]))
    keys.append((DEFAULT_FLOOR_SCALE, PREFAULT_MB))
    if max(p for p, _ in sizes) < 1_000_000:
        keys = keys[:1]  # the other services only serve the 1M rows
    with ExitStack() as stack:
        clients: dict[ServiceKey, httpx.Client] = {}
        for scale, prefault_mb in keys:
            settings = {"STICKYD_FLOOR_SCALE": f"{scale:g}", "STICKYD_WORKER_PREFAULT_MB": str(prefault_mb)}
            service = stack.enter_context(running_service({**env, **settings}))
            clients[(scale, prefault_mb)] = stack.enter_context(httpx.Client(base_url=service.url, timeout=600))
        for partitions, members in sizes:
            for case in cases(partitions, others=not args.sticky_only):
                # kafka-python takes up to ~90 s a row at 10k x 1k: on Kafka's sticky layout only
                peer = not args.no_peer and partitions <= 10_000 and case[0] == MAIN_LAYOUT
                run_case(report, clients, partitions, members, case, peer)
    report.write()


if __name__ == "__main__":
    main()
