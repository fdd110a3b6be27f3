"""Kafka Streams churn on a real Apache Kafka 4.4 broker: the test word-count application
(plugins/kafka's `CountApp`, one JVM and state directory per instance, one standby per stateful
task, keys Zipf-skewed so that the largest task holds 15-40 times the state of the smallest) on
the streams protocol (KIP-1071, `group.protocol=streams`), scaled out 2 -> 3 -> 4 instances, one
killed, scaled back in, once with the broker's built-in `sticky` task assignor and once with
stickyd through KIP-1357 (`group.streams.assignors` on the broker, the group config
`streams.assignor.name=stickyd`; moves weighted by restore cost), on one broker.

    python -m bench.broker.streams_churn                # 12 partitions, 60,000 records
    python -m bench.broker.streams_churn --quick        # 6 partitions, 6,000 records
    python -m bench.broker.streams_churn --orders up    # one process-id order (default: up, down)

Optional rows (`--assignors`, slower: Kafka's minimum probing interval is a minute) run the same
churn on the classic protocol with the KIP-924 client-side assignors: `stickyd-kip924`,
`ha-kip924` (Kafka's default HighAvailabilityTaskAssignor), `sticky-kip924`.

Per event: active tasks whose instance changed (stateful / all), standby replicas placed where
there was none, state moved = changelog records read to build state where it was not (records
restored into active stores, Kafka's StateRestoreListener, plus records loaded by standby and
warm-up tasks, StandbyUpdateListener), the time from the event until every instance was RUNNING
with the assignment balanced and unchanged for a quiet window, and whether the output counts were
exact afterwards; for a kill or a leave, the state the departing instance held (its tasks'
changelog sizes). The input is idle during each event (the step's records are produced and counted
before it), so what standbys load is state being built, not new records.

Both assignors break ties between instances in process-id order, and Kafka Streams draws each
instance's process id at random, so one churn can take different paths from run to run. The
churn runs once per order given (`--orders`): `up`, the process ids rising in the order the
instances start (a < b < c < d), and `down`, falling (a > b > c > d); each instance's id is
written in its state directory before it starts, as Kafka Streams keeps it there.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.results import write_section
from stickyd.cli.child_service import running_service
from tests.kafka.apache_kafka import apache_kafka_broker
from tests.kafka.streams.streams_app import StreamsApp

ASSIGNORS = {
    "sticky": "Kafka built-in sticky (KIP-1071)",
    "stickyd": "stickyd restore_cost (KIP-1357)",
    "stickyd-kip924": "stickyd (KIP-924, classic protocol)",
    "ha-kip924": "Kafka HighAvailabilityTaskAssignor (KIP-924)",
    "sticky-kip924": "Kafka StickyTaskAssignor (KIP-924)",
}
ASSIGNOR_CLASS = "io.stickyd.kafka.streams.StickydStreamsGroupAssignor"
FIRST = ("a", "b")
EVENTS = [("join", "c"), ("join", "d"), ("kill", "b"), ("leave", "c")]
INSTANCES = ("a", "b", "c", "d")
ORDERS = {"up": "a < b < c < d", "down": "a > b > c > d"}
"""the process-id orders the churn can run in (`--orders`)."""
FALLBACK_LINE = "did not answer"  # the broker log's WARN when stickyd fails and `sticky` assigns


@dataclass
class Snapshot:
    active: dict[str, str]  # task -> instance
    standby: set[tuple[str, str]]  # (task, instance)
    built: int  # records restored into active stores + records loaded by standby / warm-up tasks


def snapshot(app: StreamsApp) -> Snapshot:
    active: dict[str, str] = {}
    standby: set[tuple[str, str]] = set()
    built = 0
    for instance in app.instances.values():
        status = instance.status() or {}
        built += status.get("restored_records", 0) + status.get("standby_records", 0)
        if instance.alive():
            active.update(dict.fromkeys(status.get("active", []), instance.name))
            standby |= {(task, instance.name) for task in status.get("standby", [])}
    return Snapshot(active, standby, built)


def held(app: StreamsApp) -> dict[str, int]:
    """Per live instance, the changelog records of the stateful tasks it runs or stands by for:
    what its departure makes the others rebuild (one replica of each)."""
    sizes = app.changelog_sizes()
    out = {}
    for instance in app.live():
        status = instance.status() or {}
        tasks = set(status.get("active", [])) | set(status.get("standby", []))
        out[instance.name] = sum(sizes.get(t, 0) for t in tasks)
    return out


def balanced(app: StreamsApp) -> bool:
    """Every instance RUNNING, every task active once, stateful tasks with a standby, and the
    active and stateful (active + standby) counts per instance within one of each other."""
    tasks = {f"{s}_{p}" for s in ("0", "1") for p in range(app.partitions)}
    statuses = [i.status() or {} for i in app.live()]
    if not statuses or any(s.get("state") != "RUNNING" for s in statuses):
        return False
    actives = [t for s in statuses for t in s.get("active", [])]
    if sorted(actives) != sorted(tasks):
        return False
    standbys = [set(s.get("standby", [])) for s in statuses]
    if len(statuses) > 1 and not {t for t in tasks if t.startswith("1_")} <= set().union(*standbys):
        return False
    active_counts = [len(s.get("active", [])) for s in statuses]
    stateful_counts = [
        len([t for t in s.get("active", []) if t.startswith("1_")]) + len(sb)
        for s, sb in zip(statuses, standbys, strict=True)
    ]
    return max(active_counts) - min(active_counts) <= 1 and max(stateful_counts) - min(stateful_counts) <= 1


def settle(app: StreamsApp, quiet_s: float, timeout_s: float) -> tuple[float, bool]:
    """Waits until what runs (states, active and standby tasks) has not changed for quiet_s
    (longer than a probing interval where there is one); returns when it last changed (monotonic)
    and whether every instance was then RUNNING with the assignment balanced."""
    started = time.monotonic()
    last_change = started
    last = None
    while time.monotonic() - started < timeout_s:
        statuses = {i.name: i.status() or {} for i in app.live()}
        current = {
            name: (s.get("state"), tuple(s.get("active", [])), tuple(s.get("standby", [])))
            for name, s in statuses.items()
        }
        if current != last:
            last_change = time.monotonic()
            last = current
        elif time.monotonic() - last_change >= quiet_s and balanced(app):
            return last_change, True
        elif time.monotonic() - last_change >= quiet_s and time.monotonic() - started > 2 * quiet_s:
            return last_change, False
        time.sleep(0.25)
    return last_change, balanced(app)


@dataclass
class Step:
    assignor: str
    order: str
    event: str
    stateful_moved: int
    actives_moved: int
    standbys_placed: int
    state_moved: int
    seconds: float
    balanced: bool
    exact: bool
    departing_held: int | None = None
    """a kill or leave: the changelog records of the tasks the departing instance held just before."""

    def line(self) -> str:
        held = "-" if self.departing_held is None else f"{self.departing_held:,}"
        return (
            f"| {ORDERS[self.order]} | {ASSIGNORS[self.assignor]} | {self.event} | "
            f"{self.stateful_moved} / {self.actives_moved} | "
            f"{self.standbys_placed} | {self.state_moved:,} | {held} | {self.seconds:.1f} s | "
            f"{'yes' if self.balanced else 'no'} | {'yes' if self.exact else 'no'} |"
        )


def process_ids(order: str, run: int) -> dict[str, uuid.UUID]:
    """Each instance's process id, rising with its start (`up`) or falling (`down`); `run` sets the
    ids' high bits, so that no two runs' instances share one (as no two applications' do), while
    the ids of one run keep their order."""
    ranks = range(1, len(INSTANCES) + 1) if order == "up" else range(len(INSTANCES), 0, -1)
    return {name: uuid.UUID(int=(run << 64) | rank) for name, rank in zip(INSTANCES, ranks, strict=True)}


def app_for(
    assignor: str, order: tuple[str, int], bootstrap: str, stickyd_url: str, folder: Path, args: argparse.Namespace
) -> StreamsApp:
    config = {"num.standby.replicas": "1", "acceptable.recovery.lag": str(args.acceptable_lag)}
    if assignor.endswith("-kip924"):
        config |= {
            "stickyd.url": stickyd_url,
            "stickyd.probing.rebalance.interval.ms": "60000",
            "probing.rebalance.interval.ms": "60000",
        }
        app_assignor = assignor.removesuffix("-kip924")
    else:
        config["group.protocol"] = "streams"
        app_assignor = "broker"  # no task.assignor.class: the broker assigns
    app = StreamsApp(
        bootstrap=bootstrap,
        folder=folder,
        assignor=app_assignor,
        config=config,
        partitions=args.partitions,
        process_ids=process_ids(*order),
    )
    app.create_topics()
    if not assignor.endswith("-kip924"):
        app.choose_assignor(assignor)
    return app


def run(
    assignor: str, order: tuple[str, int], bootstrap: str, stickyd_url: str, folder: Path, args: argparse.Namespace
) -> list[Step]:
    """One churn of `assignor`, the instances' process ids in `order` (its name and the run's number)."""
    app = app_for(assignor, order, bootstrap, stickyd_url, folder, args)
    quiet_s = args.quiet_kip924_s if assignor.endswith("-kip924") else args.quiet_s
    steps = []
    try:
        app.produce(args.records, skew=args.skew)
        for name in FIRST:
            app.start(name)
        settle(app, quiet_s, args.timeout_s)
        produced = args.records
        for event, name in EVENTS:
            app.produce(args.step_records, start=produced, skew=args.skew)
            produced += args.step_records
            assert app.wait_counts(120) == dict(app.expected), f"{assignor}: counts wrong before {event} {name}"
            time.sleep(2.0)  # standbys read the step's changelog records before the event
            before = snapshot(app)
            holdings = held(app) if event != "join" else {}
            started = time.monotonic()
            if event == "join":
                app.start(name)
            elif event == "leave":
                app.instances[name].stop()
            else:
                app.instances[name].kill()
            last_change, is_balanced = settle(app, quiet_s, args.timeout_s)
            after = snapshot(app)
            moved = [t for t, owner in before.active.items() if after.active.get(t) != owner]
            step = Step(
                assignor=assignor,
                order=order[0],
                event=f"{event} {name} ({len(app.live())} left)",
                stateful_moved=sum(1 for t in moved if t.startswith("1_")),
                actives_moved=len(moved),
                standbys_placed=len(after.standby - before.standby),
                state_moved=after.built - before.built,
                seconds=last_change - started,
                balanced=is_balanced,
                exact=app.wait_counts(120) == dict(app.expected),
                departing_held=holdings.get(name),
            )
            print(step.line(), flush=True)
            steps.append(step)
    finally:
        app.stop_all()
    return steps


def verdict(steps: list[Step]) -> list[str]:
    """stickyd (KIP-1357) against the built-in sticky in each order, step by step: tasks and state
    moved no more, time within 2x; and at least 30% less state moved over each churn and over all."""
    orders = list(dict.fromkeys(s.order for s in steps))
    pairs = [
        (a, b)
        for order in orders
        for a, b in zip(
            [s for s in steps if s.order == order and s.assignor == "stickyd"],
            [s for s in steps if s.order == order and s.assignor == "sticky"],
            strict=False,
        )
    ]
    if not pairs:
        return []
    lines = [
        "",
        "| process ids | event | tasks moved <= sticky | state moved <= sticky | time <= 2x sticky |",
        "|---|---|---|---|---|",
    ]
    for a, b in pairs:
        marks = [
            a.actives_moved <= b.actives_moved,
            a.state_moved <= b.state_moved,
            a.seconds <= 2 * b.seconds and a.balanced,
        ]
        verdicts = " | ".join("yes" if m else "**miss**" for m in marks)
        lines.append(f"| {ORDERS[a.order]} | {a.event} | {verdicts} |")
    lines.append("")
    for order in [*orders, None] if len(orders) > 1 else orders:
        chosen = [(a, b) for a, b in pairs if order is None or a.order == order]
        lines.append(_saved(chosen, f"process ids {ORDERS[order]}" if order else "both orders together"))
    # what the kills and leaves rebuilt, against what the departing instances held
    for name, side in (("stickyd", [a for a, _ in pairs]), ("built-in sticky", [b for _, b in pairs])):
        departures = [s for s in side if s.departing_held]
        held_total = sum(s.departing_held or 0 for s in departures)
        if held_total:
            rebuilt = sum(s.state_moved for s in departures) / held_total
            lines.append(
                f"\nKills and leaves, {name}: {rebuilt:.0%} of the state the departing instances held was "
                "rebuilt from the changelogs; the rest was still on disk where it went."
            )
    return lines


def _saved(pairs: list[tuple[Step, Step]], label: str) -> str:
    ours, theirs = sum(a.state_moved for a, _ in pairs), sum(b.state_moved for _, b in pairs)
    saved = 1 - ours / theirs if theirs else 0.0
    return (
        f"- State moved over the churn, {label}: stickyd {ours:,} records, built-in sticky {theirs:,} "
        f"({abs(saved):.0%} {'less' if saved >= 0 else 'more'}; target at least 30% less: "
        f"{'met' if saved >= 0.3 else '**miss**'})."
    )


def main() -> None:
    # SIGTERM unwinds like Ctrl-C, so every instance, the broker and the service are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--assignors", default="sticky,stickyd", help=f"comma-separated, of {', '.join(ASSIGNORS)}")
    parser.add_argument("--orders", default="up,down", help=f"comma-separated, of {', '.join(ORDERS)}")
    parser.add_argument("--title", default="Kafka Streams churn (real application)")
    args = parser.parse_args()
    args.partitions = 6 if args.quick else 12
    args.records = 6_000 if args.quick else 60_000
    args.step_records = 600 if args.quick else 6_000
    args.skew = 1.5
    args.acceptable_lag = 100
    args.quiet_s = 6.0 if args.quick else 10.0
    args.quiet_kip924_s = 20.0 if args.quick else 65.0
    args.timeout_s = 150.0
    header = (
        "| process ids | assignor | event | actives moved (stateful / all) | standbys placed | "
        "state moved (records) | state the departing instance held | time to RUNNING + balanced | balanced | "
        "counts exact |\n|---|---|---|---:|---:|---:|---:|---:|---|---|"
    )
    print(header, flush=True)
    steps: list[Step] = []
    properties = {
        "group.streams.num.standby.replicas": "1",
        "group.streams.assignors": f"sticky,{ASSIGNOR_CLASS}",
        "group.streams.initial.rebalance.delay.ms": "0",
    }
    with (
        running_service({"STICKYD_WORKERS": "1"}) as service,
        apache_kafka_broker(properties | {"stickyd.url": service.url, "stickyd.timeout.ms": "2000"}) as broker,
        tempfile.TemporaryDirectory(prefix="streams-churn-") as tmp,
    ):
        runs = [(order, assignor) for order in args.orders.split(",") for assignor in args.assignors.split(",")]
        for number, (order, assignor) in enumerate(runs, start=1):
            folder = Path(tmp) / f"{order}-{assignor}"
            steps += run(assignor, (order, number), broker.bootstrap, service.url, folder, args)
        fallbacks = [line for line in broker.log_text().splitlines() if FALLBACK_LINE in line]
    for line in fallbacks:  # why stickyd did not answer, from the broker's log
        print(line, file=sys.stderr)
    lines = [*notes(args, len(fallbacks)), "", header, *(s.line() for s in steps), *verdict(steps)]
    write_section(args.title, "\n".join(lines))


def notes(args: argparse.Namespace, fallbacks: int) -> list[str]:
    return [
        f"{args.partitions} partitions (tasks 0_p stateless, 1_p counting in RocksDB with a changelog), one "
        f"standby per stateful task, words Zipf-skewed (exponent {args.skew}) over the stateful tasks, "
        f"{args.records:,} records first and {args.step_records:,} more before every event (input idle during "
        f"the event), one thread per instance, at-least-once. "
        f"Instances a, b, then {', '.join(' '.join(e) for e in EVENTS)}. "
        f"Settled = nothing changed in what runs for {args.quiet_s:.0f} s (KIP-924 rows: {args.quiet_kip924_s:.0f} s, "
        f"probing interval 60 s); the time is from the event to the last change. Broker fallbacks from stickyd "
        f"to sticky during the run: {fallbacks}.",
        "",
        "A kill or a leave makes the others rebuild one replica of every stateful task the departing "
        "instance ran or stood by for, less what they still hold on disk: an instance keeps the state "
        "directory of a task it gave away for `state.cleanup.delay.ms` (10 minutes by default) and "
        "reads only what it missed. The column beside state moved gives what the departing instance "
        "held just before (the changelog records of its tasks).",
        "",
        "Both assignors break ties between instances in process-id order: where two placements cost the "
        "same now (which instance gives a task up at a join, which one takes a new standby at the kill), "
        "the process ids decide, and what the later kill and leave rebuild follows from it. Kafka Streams "
        "draws them at random; here each instance starts with a chosen one, and the churn runs once with "
        "the ids rising in the order the instances start and once falling.",
    ]


if __name__ == "__main__":
    main()
