"""Kafka Streams churn on a real Apache Kafka broker: the test word-count application
(plugins/kafka's `CountApp`, one JVM and state directory per instance) through join, join,
leave, kill, join, under stickyd's KIP-924 assignor, Kafka's default HighAvailabilityTaskAssignor,
Kafka's KIP-924 StickyTaskAssignor and the KIP-1071 streams protocol (the broker's built-in
sticky assignor), one after the other on one broker.

    python -m bench.broker.streams_churn                # 12 partitions, 24,000 records, 65 s quiet window
    python -m bench.broker.streams_churn --quick        # 6 partitions, 6,000 records, shorter windows

Per event: stateful active tasks whose instance changed (stable before vs stable after),
records restored into active stores (Kafka's StateRestoreListener, the per-task restore-total
metrics summed), records loaded by standby and warm-up tasks (StandbyUpdateListener), the time
from the event until the assignment was last changed before a quiet window (stable) and
whether it was then balanced, and whether the output counts were exact afterwards.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.results import write_section
from stickyd.cli.child_service import running_service
from tests.kafka.apache_kafka import apache_kafka_broker
from tests.kafka.streams.streams_app import StreamsApp

ASSIGNORS = {
    "stickyd": "stickyd (KIP-924)",
    "ha": "Kafka HighAvailabilityTaskAssignor",
    "sticky": "Kafka StickyTaskAssignor",
    "kip1071": "Kafka broker-side sticky (KIP-1071)",
}
"""`kip1071` runs the application with group.protocol=streams: the broker assigns the tasks."""
EVENTS = [("join", "d"), ("join", "e"), ("leave", "b"), ("kill", "c"), ("join", "f")]


@dataclass
class Snapshot:
    active: dict[str, str]  # task -> instance
    standby: dict[str, set[str]]  # instance -> standby tasks
    restored: int
    loaded: int


def snapshot(app: StreamsApp) -> Snapshot:
    active: dict[str, str] = {}
    standby: dict[str, set[str]] = {}
    restored = loaded = 0
    for instance in app.instances.values():
        status = instance.status() or {}
        restored += status.get("restored_records", 0)
        loaded += status.get("standby_records", 0)
        if instance.alive():
            active.update(dict.fromkeys(status.get("active", []), instance.name))
            standby[instance.name] = set(status.get("standby", []))
    return Snapshot(active, standby, restored, loaded)


def balanced(app: StreamsApp) -> bool:
    """Every task active once on a RUNNING instance, stateful tasks with a standby, and the
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
    """Waits until the tasks running have not changed for quiet_s (longer than a probing
    interval, so a pending follow-up rebalance has happened); returns when they last changed
    (monotonic) and whether the assignment was balanced then."""
    started = time.monotonic()
    last_change = started
    last = None
    while time.monotonic() - started < timeout_s:
        current = {
            i.name: (
                (i.status() or {}).get("state"),
                tuple((i.status() or {}).get("active", [])),
                tuple((i.status() or {}).get("standby", [])),
            )
            for i in app.live()
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


def run(assignor: str, bootstrap: str, stickyd_url: str, folder: Path, args: argparse.Namespace) -> list[str]:
    config = {
        "stickyd.url": stickyd_url,
        "acceptable.recovery.lag": str(args.acceptable_lag),
        "stickyd.probing.rebalance.interval.ms": str(args.probing_ms),
        "probing.rebalance.interval.ms": "60000",
    }
    if assignor == "kip1071":
        config["group.protocol"] = "streams"
    app_assignor = "ha" if assignor == "kip1071" else assignor  # no task.assignor.class
    app = StreamsApp(
        bootstrap=bootstrap, folder=folder, assignor=app_assignor, config=config, partitions=args.partitions
    )
    app.create_topics()
    rows = []
    try:
        app.produce(args.records)
        for name in ("a", "b", "c"):
            app.start(name)
        settle(app, args.quiet_s, args.timeout_s)
        produced = args.records
        for event, name in EVENTS:
            assert app.wait_counts(120) == dict(app.expected), f"{assignor}: counts wrong before {event} {name}"
            before = snapshot(app)
            started = time.monotonic()
            if event == "join":
                app.start(name)
            elif event == "leave":
                app.instances[name].stop()
            else:
                app.instances[name].kill()
            app.produce(args.step_records, start=produced)
            produced += args.step_records
            last_change, is_balanced = settle(app, args.quiet_s, args.timeout_s)
            after = snapshot(app)
            moved = sum(1 for t, owner in before.active.items() if t.startswith("1_") and after.active.get(t) != owner)
            exact = app.wait_counts(120) == dict(app.expected)
            line = (
                f"| {ASSIGNORS[assignor]} | {event} {name} | {moved} | {after.restored - before.restored:,} | "
                f"{after.loaded - before.loaded:,} | {last_change - started:.1f} s | "
                f"{'yes' if is_balanced else 'no'} | {'yes' if exact else 'no'} |"
            )
            print(line, flush=True)
            rows.append(line)
    finally:
        app.stop_all()
    return rows


def main() -> None:
    # SIGTERM unwinds like Ctrl-C, so every instance, the broker and the service are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--assignors", default="stickyd,ha,sticky,kip1071")
    parser.add_argument("--title", default="Kafka Streams churn (real application)")
    args = parser.parse_args()
    args.partitions = 6 if args.quick else 12
    args.records = 6_000 if args.quick else 24_000
    args.step_records = 600 if args.quick else 2_400
    args.acceptable_lag = 100
    args.probing_ms = 60_000
    args.quiet_s = 20.0 if args.quick else 65.0
    args.timeout_s = 150.0
    header = (
        "| assignor | event | stateful actives moved | records restored | records loaded by standbys | "
        "time to stable | balanced | counts exact |\n|---|---|---:|---:|---:|---:|---|---|"
    )
    print(header, flush=True)
    rows = []
    with (
        running_service({"STICKYD_WORKERS": "1"}) as service,
        apache_kafka_broker({"group.streams.num.standby.replicas": "1"}) as broker,
        tempfile.TemporaryDirectory(prefix="streams-churn-") as tmp,
    ):
        for assignor in args.assignors.split(","):
            rows += run(assignor, broker.bootstrap, service.url, Path(tmp) / assignor, args)
    write_section(
        args.title,
        "\n".join(
            [
                f"{args.partitions} partitions (tasks 0_p stateless, 1_p counting in RocksDB), one standby, "
                f"{args.records:,} records first and {args.step_records:,} more at every event, "
                f"acceptable.recovery.lag={args.acceptable_lag}, probing interval {args.probing_ms // 1000} s for "
                f"the KIP-924 assignors (Kafka's minimum; the KIP-1071 protocol has no warm-ups), one thread "
                f"per instance, at-least-once; the state is "
                f"idle at each event. Stable = no change in what runs for {args.quiet_s:.0f} s.",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
