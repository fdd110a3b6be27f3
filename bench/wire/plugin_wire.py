"""The KIP-848 plug-in's assign() end to end (compact encoding, and JSON) beside Kafka's
UniformAssignor warm, on identical instances; the service alone on the compact body and on JSON;
the bytes on the wire.

    python -m bench.wire.plugin_wire                       # 10,000 x 1,000 and 1,000,000 x 2,000
    python -m bench.wire.plugin_wire --quick               # 10,000 x 1,000, one layout, fewer rounds
    python -m bench.wire.plugin_wire --sizes 2000x100      # any sizes (P x M), nothing written

Instances: `bench.layouts.kafka_like_problem`, equal and unequal subscriptions, a member leaves /
joins / partitions are added, previous owners as Kafka's range and round-robin assignments leave
them and as a sticky history with 3% noise, and as stickyd's own answer leaves them (`stickyd`: the
group solved by stickyd, then the event; what a broker that assigns with the plug-in holds)
(`--layouts`). Each section starts with the floor: the smallest group (10 topics of 2 partitions,
4 members, equal subscriptions, one member leaves), what a call costs whatever the group's size.

- Kafka UniformAssignor and the plug-in: plugins/kafka's test class `ConsumerAssignorBench` (built
  by `mvn package`), one JVM per instance with a broker's G1 settings (kafka-run-class.sh), warm
  (3 untimed calls at 10k, 2 at 1M, or more until they have taken a second between them), the
  fastest of the timed calls (3, or more until they have taken a second). The plug-in's time is
  `StickydConsumerGroupAssignor.assign()` against a warm `stickyd serve` (one solver process) on
  loopback: building the request, HTTP, the service, reading and checking the answer. Ratio:
  plug-in (compact) over UniformAssignor. Every call gets the group's Assignment objects as the
  coordinator keeps them for members whose assignment did not change (the same objects each time),
  so the plug-in reads each member's partitions once; "new maps": new Assignment objects in every
  timed call, as if every member's assignment had just changed (each read in full). "In broker":
  on the rows of equal subscriptions, the plug-in configured with `stickyd.equal.subscriptions=broker`
  (it solves the group in the JVM, the service's own closed form, the same answer, and asks
  nothing); on the rows of unequal ones, with `stickyd.unequal.subscriptions=broker` (the even split
  at the moves' bound by one max flow in the JVM, as optimal as the service's answer; when there is
  none it asks the service, and the row says so). Its ratio is over UniformAssignor too.
- CPU: the CPU time the JVM spent (all its threads: the collector's and the HTTP client's too)
  per timed call, Uniform's and the plug-in's; the plug-in's also counts the service's (web, fork
  server and solver processes, /proc) per compact request, over the service-alone POSTs. Both are
  means over calls that took at least a second between them (CPU time counts in ticks of 10 ms).
  CPU ratio: plug-in (JVM + service) over Uniform.
- service alone: the same request POSTed by this process to the same service, as the compact body
  and as JSON, the fastest of `--rounds` POSTs or more, until they have taken a second between
  them; bytes: request and answer sizes in each encoding.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from bench.incremental.events import after_optimum
from bench.kafka_assignors import LARGE, Outcome, run_kafka, stickyd_env
from bench.layouts import EVENTS, SHAPES, contract_json_bytes, kafka_like_problem, write_problem_json
from bench.limits import service_cpu_s
from bench.results import write_section
from stickyd.cli.child_service import running_service
from stickyd.models.consumer.compact import MEDIA_TYPE
from stickyd.models.consumer.compact_codec import encode_request

SIZES = [(10_000, 1_000), (1_000_000, 2_000)]
FLOOR = (20, 4)
"""the smallest group: 10 topics of 2 partitions and 4 members (equal subscriptions, one leaves)."""
LAYOUTS = ("range", "roundrobin", "sticky", "stickyd")
ASSIGNORS = ("uniform", "stickyd-plugin", "stickyd-plugin-new-maps", "stickyd-plugin-json")
IN_BROKER = {"equal": "stickyd-plugin-broker-equal", "unequal": "stickyd-plugin-broker-unequal"}
"""the plug-in solving a group in the JVM: of equal subscriptions (its closed form), of unequal ones (the
even split at the moves' bound, else it asks the service)."""
TITLE = "The plug-in's wire: compact encoding against JSON and UniformAssignor (`python -m bench.wire.plugin_wire`)"
STEADY_TITLE = "The plug-in's wire after stickyd's own answer (`python -m bench.wire.plugin_wire --layouts stickyd`)"
"""the `stickyd` layout's rows: a section of their own, so that either part can be run alone."""
CPU_MIN_S = 1.0
"""timed calls and POSTs last at least this long between them: CPU time counts in ticks of 10 ms."""
MOST_POSTS = 1000
HEADER = (
    "| size (P x M) | subscriptions | layout | event | Uniform s | plug-in s | ratio | in broker s | in broker ratio "
    "| CPU s: Uniform / plug-in (JVM + service) | CPU ratio | plug-in, new maps s "
    "| plug-in JSON s | service compact / JSON s | request compact / JSON | answer compact / JSON | moves U / s "
    "| min/max U / s | notes |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
    "|---|---|"
)


def service_alone(url: str, pid: int, body: bytes, media_type: str, rounds: int) -> tuple[float, int, float]:
    """The fastest POST of `body` (seconds), the answer's size and the service's CPU seconds per
    POST (its processes' CPU time, averaged): `rounds` POSTs, or more until they took CPU_MIN_S."""
    best, size, spent, posts = float("inf"), 0, 0.0, 0
    cpu = service_cpu_s(pid)
    with httpx.Client(timeout=120) as client:
        while posts < rounds or (spent < CPU_MIN_S and posts < MOST_POSTS):
            started = time.perf_counter()
            answer = client.post(f"{url}/v1/assign/consumer", content=body, headers={"content-type": media_type})
            took = time.perf_counter() - started
            best, spent, posts = min(best, took), spent + took, posts + 1
            answer.raise_for_status()
            size = len(answer.content)
    return best, size, (service_cpu_s(pid) - cpu) / posts


def _mb(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def _seconds(outcome: Outcome) -> str:
    """Three decimals, six under 10 ms (UniformAssignor and the broker answer small groups in µs)."""
    if outcome.seconds is None:
        return "-"
    return f"{outcome.seconds:.3f}" if outcome.seconds >= 0.01 else f"{outcome.seconds:.6f}"


def _checked_in_broker(broker: Outcome, plugin: Outcome, shape: str) -> Outcome:
    """`broker` with a note when it asked the service after all (with unequal subscriptions: no even
    split at the moves' bound, as designed), or when its moves or loads are not the service's answer's."""
    if broker.figures is None or plugin.figures is None:
        return broker
    said = [broker.note] if broker.note else []
    if not broker.figures.get("broker_solves"):
        said.append("asked the service (miss)" if shape == "equal" else "asked the service: no even split at the bound")
    if any(broker.figures[k] != plugin.figures[k] for k in ("moves", "min_load", "max_load")):
        said.append("moves or loads differ from the service's answer (miss)")
    return replace(broker, note="; ".join(said))


def _ratio(stickyd: Outcome, uniform: Outcome) -> str:
    return f"{stickyd.seconds / uniform.seconds:.2f}x" if stickyd.seconds and uniform.seconds else "-"


def _cpu(uniform: Outcome, plugin: Outcome, service_s: float) -> tuple[str, str]:
    """The CPU cell (Uniform / plug-in's JVM + service) and the CPU ratio."""
    if uniform.figures is None or plugin.figures is None:
        return "-", "-"
    mine, jvm = uniform.figures["cpu_ms"] / 1000, plugin.figures["cpu_ms"] / 1000
    cell = f"{mine:.3f} / {jvm + service_s:.3f} ({jvm:.3f} + {service_s:.3f})"
    return cell, f"{(jvm + service_s) / mine:.1f}x" if mine > 0 else "-"


def _figures(outcome: Outcome, keys: tuple[str, ...]) -> str:
    f = outcome.figures
    return "-" if f is None else "/".join(f"{f[k]:,}" for k in keys)


def one_row(label: tuple[str, str, str, str], problem: dict[str, Any], tmp: Path, args: argparse.Namespace) -> str:
    size, shape, layout, event = label
    partitions = sum(problem["topics"].values())
    json_body = contract_json_bytes(problem)
    compact_body = encode_request(problem)
    problem_file = write_problem_json(problem, tmp / "problem.json")
    env = {"STICKYD_URL": args.url, "STICKYD_TIMEOUT_MS": str(args.timeout_ms)}
    in_broker = IN_BROKER[shape]
    out = run_kafka(
        problem_file,
        [*ASSIGNORS, in_broker],
        large=partitions >= LARGE,
        cap_s=args.cap_s,
        env=env,
        as_broker=True,
        cpu_min_ms=int(CPU_MIN_S * 1000),
    )
    uniform, plugin, plugin_new_maps, plugin_json = (out[a] for a in ASSIGNORS)
    alone_compact, answer_compact, service_cpu = service_alone(
        args.url, args.service_pid, compact_body, MEDIA_TYPE, args.rounds
    )
    alone_json, answer_json, _ = service_alone(args.url, args.service_pid, json_body, "application/json", args.rounds)
    broker = _checked_in_broker(out.get(in_broker, Outcome(None, None, "")), plugin, shape)
    cpu, cpu_ratio = _cpu(uniform, plugin, service_cpu)
    labelled = (
        ("", plugin),
        ("new maps: ", plugin_new_maps),
        ("JSON: ", plugin_json),
        ("in broker: ", broker),
        ("Uniform: ", uniform),
    )
    notes = "; ".join(f"{label}{outcome.note}" for label, outcome in labelled if outcome.note)
    return (
        f"| {size} | {shape} | {layout} | {event} "
        f"| {_seconds(uniform)} | {_seconds(plugin)} | {_ratio(plugin, uniform)} "
        f"| {_seconds(broker)} | {_ratio(broker, uniform)} "
        f"| {cpu} | {cpu_ratio} | {_seconds(plugin_new_maps)} | {_seconds(plugin_json)} "
        f"| {alone_compact:.3f} / {alone_json:.3f} "
        f"| {_mb(len(compact_body))} / {_mb(len(json_body))} | {_mb(answer_compact)} / {_mb(answer_json)} "
        f"| {_figures(uniform, ('moves',))} / {_figures(plugin, ('moves',))} "
        f"| {_figures(uniform, ('min_load', 'max_load'))} / {_figures(plugin, ('min_load', 'max_load'))} | {notes} |"
    )


def _sizes(args: argparse.Namespace) -> list[tuple[int, int]]:
    if args.sizes:
        return [(int(p), int(m)) for p, m in (s.split("x") for s in args.sizes.split(","))]
    return SIZES[:1] if args.quick else SIZES


def _instances(
    args: argparse.Namespace, layouts: list[str]
) -> Iterator[tuple[tuple[str, str, str, str], dict[str, Any]]]:
    """(label, problem) of every row: the floor first (for each section run, unless `--sizes`), then
    every size, shape, layout and event."""
    floor = (
        []
        if args.sizes
        else [(FLOOR, "equal", layout, "leave") for layout in ("sticky", "stickyd") if layout in layouts]
    )
    rows = [
        ((p, m), shape, layout, event)
        for p, m in _sizes(args)
        for shape in SHAPES
        for layout in layouts
        for event in args.events.split(",")
    ]
    for (partitions, members), shape, layout, event in floor + rows:
        problem = (
            after_optimum(partitions, members, shape, event)
            if layout == "stickyd"
            else kafka_like_problem(partitions, members, layout=layout, shape=shape, event=event)
        )
        problem["options"] = {"time_limit_ms": args.time_limit_ms}
        yield (f"{partitions:,} x {members:,}", shape, layout, event), problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 x 1,000, the sticky layout, one round")
    parser.add_argument("--sizes", default="", help="comma-separated P x M, e.g. 2000x100 (nothing is written)")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--events", default=",".join(EVENTS))
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per assignor (the fastest counts)")
    parser.add_argument("--cap-s", type=float, default=300.0)
    parser.add_argument("--time-limit-ms", type=int, default=10_000, help="the plug-in's deadline is twice this")
    args = parser.parse_args()
    layouts = ["sticky"] if args.quick else args.layouts.split(",")
    rounds = 1 if args.quick else args.rounds
    args.rounds = rounds
    print(HEADER, flush=True)
    rows: dict[str, list[str]] = {TITLE: [], STEADY_TITLE: []}
    load_before = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="plugin-wire-") as tmp,
        running_service({"STICKYD_WORKERS": "1"}) as service,
    ):
        stickyd_env(service, args.time_limit_ms)  # one request solved first: the service is warm
        args.url, args.service_pid, args.timeout_ms = service.url, service.pid, 2 * args.time_limit_ms
        for label, problem in _instances(args, layouts):
            row = one_row(label, problem, Path(tmp), args)
            rows[STEADY_TITLE if label[2] == "stickyd" else TITLE].append(row)
            print(row, flush=True)
    if args.sizes:
        return
    load = f"1-minute load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end."
    for title, written in rows.items():
        if written:
            write_section(title, "\n".join([load, "", __doc__.split("\n\n", 2)[2].strip(), "", HEADER, *written]))


if __name__ == "__main__":
    main()
