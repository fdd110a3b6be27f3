"""Kafka's own consumer assignors beside stickyd on identical instances, in one run: time, moves and
min/max load per assignor.

    python -m bench.kafka_assignors            # 10,000 x 1,000 and 1,000,000 x 2,000
    python -m bench.kafka_assignors --quick    # 10,000 x 1,000 only

Instances: `bench.layouts.kafka_like_problem` (previous owners as Kafka's sticky assignors leave
them: each member a few partitions of many topics, 3% noise), equal and unequal subscriptions,
then a member leaves / joins / partitions are added. Each instance is written once as request
JSON (docs/wire-format.md); every assignor reads that file.

- stickyd: `solve_consumer` in this process (warm), timed from reading the file's bytes through the
  service's JSON parser (`stickyd.service.http.json_guard.load_object`) to the answer; `time_limit_ms` in the
  request (default 60 s, `--stickyd-limit-ms`).
- Kafka: plugins/kafka's test class `ConsumerAssignorBench` (`mvn package` builds it), one JVM per
  assignor and instance (serial GC, one core's worth, heap per size), capped at `--cap-s`; a capped
  run is a miss for that assignor, and its later events at the same size and shape are skipped.
  Kafka's time is the assignor call alone (its input built beforehand), after untimed warm-up calls
  that let the JIT compile it (3 at 10k, 1 at 1M), the faster of two runs at 10k and one run at 1M.
- stickyd (KIP-848 plug-in): the same harness calls `StickydConsumerGroupAssignor.assign()` on the
  same group spec, warmed the same way, against a warm `stickyd serve` (one solver process) on
  loopback: the coordinator's real path (mapping, HTTP, solve, reading and checking the answer).
  Its deadline is twice the time limit it sends (capped at the service's 30 s). A call the uniform
  fallback answered is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.layouts import EVENTS, SHAPES, kafka_like_problem, write_problem_json
from bench.results import write_section
from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.service.http.json_guard import load_object
from stickyd.solvers import solve_consumer
from tests.kafka.jvm import APP_CLASSPATH

BENCH_CLASS = "io.stickyd.kafka.bench.ConsumerAssignorBench"
SIZES = [(10_000, 1_000), (1_000_000, 2_000)]
KAFKA_ASSIGNORS = {
    "sticky": "Kafka StickyAssignor (client)",
    "cooperative-sticky": "Kafka CooperativeStickyAssignor (client)",
    "uniform": "Kafka UniformAssignor (KIP-848 server)",
    "range": "Kafka RangeAssignor (KIP-848 server)",
    "stickyd-plugin": "stickyd StickydConsumerGroupAssignor (KIP-848 server, HTTP)",
}
LARGE = 100_000
SERVICE_MAX_LIMIT_MS = 30_000  # the service's largest time limit (solvers/time_policy.py)


@dataclass(frozen=True)
class Outcome:
    """One assignor on one instance: seconds, and figures (None when it was capped or skipped)."""

    seconds: float | None
    figures: dict[str, Any] | None
    note: str = ""


def run_kafka(
    problem_file: Path,
    assignors: list[str],
    *,
    large: bool,
    cap_s: float,
    env: dict[str, str] | None = None,
    as_broker: bool = False,
    cpu_min_ms: int = 0,
    owners_dir: Path | None = None,
) -> dict[str, Outcome]:
    """`ConsumerAssignorBench` on the file for the assignors, in one JVM, stopped after cap_s (then
    every one of them is reported capped). `env`: added to the JVM's environment (stickyd's address).
    `as_broker`: the JVM as a broker runs it (kafka-run-class's G1 settings) and, at every size, two
    untimed calls before the faster of three timed ones, as in a broker that has assigned before.
    `cpu_min_ms`: more timed calls until they have taken that long, over which the JVM's CPU time per
    call (`cpu_ms`) is averaged. `owners_dir`: each assignor's answer is also written there, as
    `<assignor>.owners` (a big-endian int32 member index per partition, in the problem's order)."""
    heap = "-Xmx6g" if large else "-Xmx1g"
    rounds, warm_ups = ("1", "1") if large else ("2", "3")
    gc = ["-XX:+UseSerialGC"]
    if as_broker:
        rounds, warm_ups = ("3", "2") if large else ("3", "3")
        gc = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35"]
    cpu = [f"-Dstickyd.bench.cpu.min.ms={cpu_min_ms}"]
    command = ["java", heap, *gc, *cpu, "-cp", APP_CLASSPATH, BENCH_CLASS, str(problem_file)]
    try:
        done = subprocess.run(
            [*command, ",".join(assignors), rounds, warm_ups, *([str(owners_dir)] if owners_dir else [])],
            capture_output=True,
            timeout=cap_s,
            check=True,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        return {a: Outcome(None, None, f"capped: no answer within {cap_s:.0f} s (miss)") for a in assignors}
    except subprocess.CalledProcessError as failed:
        last = (failed.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1][:200]
        return {a: Outcome(None, None, f"failed (miss): {last}") for a in assignors}
    answers = json.loads(done.stdout)
    return {a: _outcome(answers[a]) for a in assignors}


def _outcome(figures: dict[str, Any]) -> Outcome:
    note = ""
    if figures.get("fallbacks"):
        note = f"{figures['fallbacks']} timed call(s) answered by the uniform fallback (not stickyd's figures)"
    if "withheld" in figures:
        note = (
            f"{figures['withheld']:,} withheld in the first answer; settled after "
            f"{figures['follow_up_rebalances']} follow-up rebalance(s), {figures['follow_up_ms'] / 1000:.3f} s more"
        )
    return Outcome(figures["time_ms"] / 1000, figures, note)


def run_stickyd(problem_file: Path) -> Outcome:
    """stickyd as the service runs it: bytes -> JSON object -> solve, all timed."""
    started = time.perf_counter()
    solution = solve_consumer(load_object(problem_file.read_bytes()))
    elapsed = time.perf_counter() - started
    s = solution.stats
    figures = {"moves": s.moves, "min_load": s.min_load, "max_load": s.max_load, "unassigned": 0, "duplicated": 0}
    unassigned = sum(len(ps) for ps in solution.unassigned.values())
    figures["unassigned"] = unassigned
    note = f"{s.solver}" + (", proven optimal" if s.optimal else "") + (", fallback" if s.fallback else "")
    return Outcome(elapsed, figures, note)


def stickyd_env(service: ServiceProcess, limit_ms: int) -> dict[str, str]:
    """The plug-in's settings for the harness's JVM: the warm service (one request solved first) and a
    deadline of twice the time limit, which the plug-in halves into the request's `time_limit_ms`."""
    warm = {"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]}
    httpx.post(f"{service.url}/v1/assign/consumer", json=warm, timeout=30).raise_for_status()
    return {"STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": str(2 * min(limit_ms, SERVICE_MAX_LIMIT_MS))}


def row(size: str, shape: str, event: str, name: str, outcome: Outcome) -> str:
    if outcome.figures is None:
        return f"| {size} | {shape} | {event} | {name} | - | - | - | {outcome.note} |"
    f = outcome.figures
    wrong = f["unassigned"] + f["duplicated"]
    valid = "" if wrong == 0 else f"{f['unassigned']} unassigned, {f['duplicated']} given twice; "
    return (
        f"| {size} | {shape} | {event} | {name} | {outcome.seconds:.3f} s | {f['moves']:,} | "
        f"{f['min_load']}/{f['max_load']} | {valid}{outcome.note} |"
    )


def verdicts(size: str, shape: str, event: str, stickyd: Outcome, peers: dict[str, Outcome]) -> list[str]:
    """The targets, checked: never more moves, never less balanced, and the times against Kafka's."""
    lines = []
    s = stickyd.figures
    assert s is not None and stickyd.seconds is not None
    for name, peer in peers.items():
        p = peer.figures
        if p is None or peer.seconds is None or name == KAFKA_ASSIGNORS["stickyd-plugin"]:
            continue
        if s["moves"] > p["moves"]:
            lines.append(f"{size} {shape} {event}: MISS stickyd moves {s['moves']} > {name} {p['moves']}")
        if s["max_load"] - s["min_load"] > p["max_load"] - p["min_load"]:
            lines.append(f"{size} {shape} {event}: MISS stickyd less balanced than {name}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 x 1,000 only")
    parser.add_argument("--layout", default="sticky", help="bench.layouts layout of the previous owners")
    parser.add_argument("--cap-s", type=float, default=300.0, help="per Kafka assignor and instance")
    parser.add_argument("--stickyd-limit-ms", type=int, default=60_000)
    args = parser.parse_args()
    header = (
        "| size (P x M) | subscriptions | event | assignor | time | moves | min/max load | notes |\n"
        "|---|---|---|---|---:|---:|---|---|"
    )
    print(header, flush=True)
    rows: list[str] = []
    misses: list[str] = []
    ratios: list[str] = []
    load_before = os.getloadavg()[0]
    solve_consumer({"topics": {"warm-up": 2}, "members": [{"id": "m", "topics": ["warm-up"]}]})
    with (
        tempfile.TemporaryDirectory(prefix="kafka-assignors-") as tmp,
        running_service({"STICKYD_WORKERS": "1"}) as service,
    ):
        jvm_env = stickyd_env(service, args.stickyd_limit_ms)
        for partitions, members in SIZES[:1] if args.quick else SIZES:
            size = f"{partitions:,} x {members:,}"
            for shape in SHAPES:
                capped: set[str] = set()
                for event in EVENTS:
                    problem = kafka_like_problem(partitions, members, layout=args.layout, shape=shape, event=event)
                    problem["options"] = {"time_limit_ms": args.stickyd_limit_ms}
                    problem_file = write_problem_json(problem, Path(tmp) / "problem.json")
                    del problem
                    stickyd = run_stickyd(problem_file)
                    peers: dict[str, Outcome] = {}
                    for assignor, label in KAFKA_ASSIGNORS.items():
                        if assignor in capped:
                            peers[label] = Outcome(None, None, "skipped: capped at an earlier event (miss)")
                            continue
                        large = partitions >= LARGE
                        peers[label] = run_kafka(problem_file, [assignor], large=large, cap_s=args.cap_s, env=jvm_env)[
                            assignor
                        ]
                        if peers[label].figures is None:
                            capped.add(assignor)
                    lines = [row(size, shape, event, "stickyd", stickyd)]
                    lines += [row(size, shape, event, label, outcome) for label, outcome in peers.items()]
                    for line in lines:
                        print(line, flush=True)
                    rows += lines
                    misses += verdicts(size, shape, event, stickyd, peers)
                    sticky = peers[KAFKA_ASSIGNORS["sticky"]]
                    if partitions >= LARGE and stickyd.seconds is not None:
                        slower = sticky.seconds is not None and stickyd.seconds > sticky.seconds
                        if slower:
                            misses.append(f"{size} {shape} {event}: MISS stickyd slower than Kafka's StickyAssignor")
                    uniform = peers[KAFKA_ASSIGNORS["uniform"]]
                    if uniform.seconds and stickyd.seconds:
                        ratios.append(f"{size} {shape} {event}: {stickyd.seconds / uniform.seconds:.1f}x")
    for line in misses:
        print(line, flush=True)
    write_section(
        "Kafka's consumer assignors beside stickyd (`python -m bench.kafka_assignors`)",
        "\n".join(
            [
                f"1-minute load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
                "",
                __doc__.split("\n\n", 2)[2].strip(),
                "",
                header,
                *rows,
                "",
                "Targets (stickyd never more moves and never less balanced than any; at 1M x 2,000 no "
                "slower than Kafka's StickyAssignor): "
                + ("all met where Kafka's assignor answered." if not misses else "misses below."),
                *[f"- {m}" for m in misses],
                "",
                "stickyd's time over the server-side UniformAssignor's (as measured; the coordinator's "
                "uniform assignor is a greedy pass without an optimality proof): " + "; ".join(ratios) + ".",
            ]
        ),
    )


if __name__ == "__main__":
    main()
