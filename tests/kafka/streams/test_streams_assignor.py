"""StickydTaskAssignor (KIP-924) in a real Kafka Streams application on a real Apache Kafka broker:
separate JVMs, each with its own RocksDB state directory, asking a real `stickyd serve`.

Processing is at-least-once (Kafka's default). The output's counts are compared for equality with
what was produced after every step; an instance is only killed once its input is processed and
committed, so at-least-once cannot double count there (a kill in the middle of a batch could)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

from stickyd.cli.child_service import ServiceProcess
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.models.streams.validation import validate_streams_solution
from tests.kafka.apache_kafka import ApacheKafka
from tests.kafka.streams.streams_app import PARTITIONS, STATEFUL_SUBTOPOLOGY, Answer, StreamsApp, streams_app


def stateful(tasks: set[str]) -> set[str]:
    return {t for t in tasks if t.split("_")[0] == STATEFUL_SUBTOPOLOGY}


def assert_valid_answer(answer: Answer) -> None:
    """The answer the application used passes the shared contract validator."""
    problem = StreamsProblem.model_validate(answer.request)
    solution = StreamsSolution.model_validate(answer.response)
    assert validate_streams_solution(problem, solution) == []


def assert_balanced(answer: Answer) -> None:
    """100% balanced (equal capacities): active, stateful and per-subtopology counts within one."""
    balance = answer.stats["balance"]
    assert balance["active"][1] - balance["active"][0] <= 1, balance
    assert balance["stateful"][1] - balance["stateful"][0] <= 1, balance
    assert balance["subtopology_spread"] <= 1, balance


def test_instances_run_stickyds_target_a_joiner_warms_up_and_a_killed_instances_tasks_go_to_standbys(
    apache_kafka: ApacheKafka, service: ServiceProcess, tmp_path: Path
) -> None:
    """Three instances run exactly stickyd's target; a fourth joins: the request weighs moves by the
    stateful tasks' changelog sizes, the stateful actives that move
    are exactly the join answer's active_moves (all to the newcomer), warm-ups run on the newcomer
    as standby tasks, and probing rebalances converge to the balanced target; an instance is killed:
    each of its stateful actives goes to the instance that held its caught-up standby. The output
    counts are exact after every step."""
    with streams_app(apache_kafka.bootstrap, tmp_path, config={"stickyd.url": service.url}) as app:
        app.produce(1200)
        for name in ("a", "b", "c"):
            app.start(name)
        three = app.wait_stable()
        assert set(three.assignment) == {"a", "b", "c"}
        assert three.assignment == {n: {**p, "warmup": set()} for n, p in three.target.items()}
        assert_balanced(three)
        assert_valid_answer(three)
        assert app.wait_counts() == dict(app.expected)

        # a fourth instance joins: not caught up on any store (acceptable.recovery.lag=20, stores
        # of ~200 records per task), so the tasks it must take are warmed up first
        before = three.active_owner()
        app.produce(600, start=1200)
        assert app.wait_counts() == dict(app.expected)
        # every count update went to a store's changelog (no cache): 1,800 records at least
        sizes = app.changelog_sizes()
        assert set(sizes) == {f"{STATEFUL_SUBTOPOLOGY}_{p}" for p in range(PARTITIONS)}
        assert sum(sizes.values()) >= 1800, sizes
        app.start("d")
        join = app.wait_answer(lambda a: "d" in a.assignment)
        assert join.followup
        assert join.assignment["d"]["warmup"], "the newcomer gets warm-up replicas"
        assert stateful(join.target["d"]["active"]), "the balanced target gives the newcomer stateful actives"
        # moves weighed by restore cost: every stateful task's changelog size (the newcomer lags by
        # all of it), about 300 records each
        assert join.request["options"]["stickiness"] == "restore_cost"
        assert set(join.request["task_costs"]) == {f"{STATEFUL_SUBTOPOLOGY}_{p}" for p in range(PARTITIONS)}
        assert min(join.request["task_costs"].values()) > 100, join.request["task_costs"]
        assert_valid_answer(join)
        warmed: set[str] = set()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            status = app.instances["d"].status() or {}
            warmed |= set(status.get("standby", [])) & join.assignment["d"]["warmup"]
            latest = app.latest_answer()
            if latest is not None and not latest.followup:
                break
            time.sleep(0.1)
        final = app.wait_stable()
        assert warmed, "the warm-ups ran on the newcomer as standby tasks"
        after = final.active_owner()
        moved = {t for t in stateful(set(before)) if after[t] != before[t]}
        assert len(moved) == join.stats["active_moves"]
        assert {after[t] for t in moved} == {"d"}
        assert_balanced(final)
        assert_valid_answer(final)
        assert app.wait_counts() == dict(app.expected)

        # an instance holding stateful actives is killed (its input processed and committed)
        victim = max(("a", "b", "c"), key=lambda n: len(stateful(final.assignment[n]["active"])))
        orphans = stateful(final.assignment[victim]["active"])
        standby_of = {t: {n for n, p in final.assignment.items() if t in p["standby"]} for t in orphans}
        app.instances[victim].kill()
        after_kill = app.wait_answer(lambda a: victim not in a.assignment and a.time_ms > final.time_ms)
        for task in orphans:
            assert after_kill.active_owner()[task] in standby_of[task], (task, standby_of, after_kill)
        assert_valid_answer(after_kill)
        survivors = app.wait_stable()
        assert set(survivors.assignment) == {"a", "b", "c", "d"} - {victim}
        assert_balanced(survivors)
        app.produce(600, start=1800)
        assert app.wait_counts() == dict(app.expected)
        for instance in app.live():
            assert (instance.status() or {}).get("fallbacks") == 0


class BlackHole:
    """A loopback TCP port that accepts connections and never answers (a hung service); `close()`
    turns it into a stopped one (connection refused)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.server.accept()
                self.held.append(connection)

    def close(self) -> None:
        self.server.close()
        for connection in self.held:
            connection.close()
        self.thread.join(timeout=5)


def wait_all_tasks_running(app: StreamsApp, names: set[str], timeout_s: float = 90.0) -> dict[str, set[str]]:
    """Waits until exactly `names` run, all RUNNING, every task active on exactly one of them and
    every stateful task also on a standby, unchanged for 2 s; returns the actives per instance."""
    tasks = {f"{s}_{p}" for s in ("0", "1") for p in range(PARTITIONS)}
    deadline = time.monotonic() + timeout_s
    since, last = None, None
    while time.monotonic() < deadline:
        statuses = {i.name: i.status() or {} for i in app.live()}
        actives = [t for s in statuses.values() for t in s.get("active", [])]
        standbys = {t for s in statuses.values() for t in s.get("standby", [])}
        ok = (
            set(statuses) == names
            and all(s.get("state") == "RUNNING" for s in statuses.values())
            and sorted(actives) == sorted(tasks)
            and stateful(tasks) <= standbys
        )
        current = {n: frozenset(s.get("active", [])) for n, s in statuses.items()}
        if ok and current == last:
            since = since or time.monotonic()
            if time.monotonic() - since >= 2:
                return {n: set(a) for n, a in current.items()}
        else:
            since = None
        last = current
        time.sleep(0.2)
    raise AssertionError(f"tasks not all running on {names}: {app.running()}")


def test_without_stickyd_the_application_rebalances_through_kafkas_own_assignor(
    apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    """stickyd black-holed (accepts, never answers) and then stopped (connection refused): the
    instances still start, rebalance when one joins, run every task once with standbys, and
    count exactly; each fallback is counted, and logged once per outage per JVM."""
    hole = BlackHole()
    config = {"stickyd.url": hole.url, "stickyd.timeout.ms": "500"}
    try:
        with streams_app(apache_kafka.bootstrap, tmp_path, config=config) as app:
            app.produce(600)
            app.start("a")
            app.start("b")
            wait_all_tasks_running(app, {"a", "b"})
            assert app.wait_counts() == dict(app.expected)
            black_holed = sum((i.status() or {}).get("fallbacks", 0) for i in app.live())
            assert black_holed >= 1

            hole.close()  # now a stopped service: connection refused
            app.start("c")
            running = wait_all_tasks_running(app, {"a", "b", "c"})
            assert running["c"], "the newcomer got tasks"
            assert sum((i.status() or {}).get("fallbacks", 0) for i in app.live()) > black_holed
            app.produce(600, start=600)
            assert app.wait_counts() == dict(app.expected)
            assert app.answers() == [], "no answer came from stickyd"
            for instance in app.live():
                fallbacks = (instance.status() or {}).get("fallbacks", 0)
                warnings = instance.log.read_text().count("using Kafka's own assignor until it does")
                assert warnings == (1 if fallbacks else 0), (instance.name, fallbacks, warnings)
    finally:
        hole.close()
