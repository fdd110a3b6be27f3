"""Run the test Kafka Streams application (plugins/kafka's test class `CountApp`) as real processes:
one JVM per instance, each with its own state directory and status file, plus the records of
what stickyd answered (`RecordingStickydTaskAssignor`), the input producer and the output reader.

The application counts words: subtopology 0 (stateless, tasks `0_p`) re-keys the input by word
into a repartition topic, subtopology 1 (stateful, tasks `1_p`) counts per word in a RocksDB store
with a changelog and writes each new count to the output topic. Processing is at-least-once
(Kafka's default); see `StreamsApp.expected`."""

from __future__ import annotations

import json
import struct
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from kafka.partitioner.default import murmur2

from tests.kafka.jvm import APP_CLASSPATH, java_command, kill_java, start_java, stop_java, write_log4j2

APP_CLASS = "io.stickyd.kafka.streams.app.CountApp"
PARTITIONS = 6
STATEFUL_SUBTOPOLOGY = "1"
PROCESS_FILE = "kafka-streams-process-metadata"
"""where Kafka Streams keeps an instance's process id, in `<state.dir>/<application.id>/`: read at
start, made with a random UUID when absent."""
STATE_DIRECTORY_LOGGER = "org.apache.kafka.streams.processor.internals.StateDirectory"

# Rebalances in seconds instead of minutes: a short session (a killed instance is noticed after
# 6 s), frequent commits, every store update in the changelog (no cache), a low acceptable lag
# so a newcomer is not caught up on stores of a few hundred records, and follow-up (probing)
# rebalances after 4 s (Kafka Streams refuses probing.rebalance.interval.ms below a minute; the
# stickyd assignor takes its own override).
TEST_CONFIG: dict[str, str] = {
    "num.standby.replicas": "1",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "1000",
    "commit.interval.ms": "200",
    "statestore.cache.max.bytes": "0",
    "acceptable.recovery.lag": "20",
    "max.warmup.replicas": "2",
    "stickyd.probing.rebalance.interval.ms": "4000",
    "metadata.max.age.ms": "5000",
}


@dataclass
class Instance:
    """One running application process."""

    name: str
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def status_file(self) -> Path:
        return self.folder / "status.json"

    @property
    def log(self) -> Path:
        return self.folder / "app.log"

    def status(self) -> dict[str, Any] | None:
        try:
            status: dict[str, Any] = json.loads(self.status_file.read_text())
        except (OSError, ValueError):
            return None
        return status

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM (KafkaStreams.close() in the shutdown hook), SIGKILL after grace_s."""
        stop_java(self.process, grace_s)

    def kill(self) -> None:
        """SIGKILL: no close, no commit, no leave; the group notices after the session timeout."""
        kill_java(self.process)


@dataclass
class StreamsApp:
    """One application (its own application.id and topics) on a broker; `expected` counts every
    word produced so far. Start instances with `start(name)`; `stop_all()` stops what is left."""

    bootstrap: str
    folder: Path
    assignor: str = "stickyd"
    config: dict[str, str] = field(default_factory=dict)
    app_id: str = field(default_factory=lambda: f"count-{uuid.uuid4().hex[:8]}")
    instances: dict[str, Instance] = field(default_factory=dict)
    expected: Counter[str] = field(default_factory=Counter)
    partitions: int = PARTITIONS
    process_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    """instance name -> the process id it starts with (else Kafka Streams draws a random one): the
    instances' order wherever an assignor breaks ties by process id."""

    @property
    def input(self) -> str:
        return f"{self.app_id}-input"

    @property
    def output(self) -> str:
        return f"{self.app_id}-output"

    def create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = [NewTopic(t, num_partitions=self.partitions, replication_factor=1) for t in (self.input, self.output)]
        for future in admin.create_topics(topics).values():
            future.result(timeout=30)

    def start(self, name: str, extra: dict[str, str] | None = None) -> Instance:
        folder = self.folder / name
        folder.mkdir(parents=True, exist_ok=True)
        # Kafka Streams logs the process id it read from its state directory at INFO
        log4j = write_log4j2(folder, folder / "app.log", {"state": STATE_DIRECTORY_LOGGER})
        if name in self.process_ids:
            home = folder / "state" / self.app_id
            home.mkdir(parents=True, exist_ok=True)
            (home / PROCESS_FILE).write_text(json.dumps({"processId": str(self.process_ids[name])}))
        settings = {
            "name": name,
            "bootstrap": self.bootstrap,
            "state_dir": str(folder / "state"),
            "status": str(folder / "status.json"),
            "assignor": self.assignor,
            "application.id": self.app_id,
            "input": self.input,
            "output": self.output,
            "stickyd.record.file": str(folder / "answers.jsonl"),
            **TEST_CONFIG,
            **self.config,
            **(extra or {}),
        }
        command = java_command(
            APP_CLASS,
            *(f"{key}={value}" for key, value in settings.items()),
            heap="-Xmx192m",
            log4j=log4j,
            classpath=APP_CLASSPATH,
        )
        process = start_java(command, folder / "stdout.log")
        instance = Instance(name, folder, process)
        self.instances[name] = instance
        return instance

    def stop_all(self) -> None:
        for instance in self.instances.values():
            instance.stop()

    def live(self) -> list[Instance]:
        return [i for i in self.instances.values() if i.alive()]

    # ---- input and output ----

    def produce(self, records: int, words: int = 60, start: int = 0, skew: float = 0.0) -> None:
        """`records` records, keys spread over the input partitions. Without `skew`, the values are
        w0..w{words-1} in turn; with it, the words are chosen so that the stateful task `1_p`
        (the repartition topic's partition p) gets a Zipf share 1/(p+1)^skew of the records: its
        store and changelog grow that much larger than the others' (skew 1.5 on 12 partitions:
        task 1_0 holds about 40 times the state of task 1_11)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for n in range(start, start + records):
            word = f"w{n % words}" if not skew else skewed_word(n, self.partitions, skew)
            producer.produce(self.input, key=str(n).encode(), value=word.encode())
            self.expected[word] += 1
        assert producer.flush(30) == 0

    def choose_assignor(self, assignor: str, standbys: int = 1) -> None:
        """The group configs of a streams group (group.protocol=streams): the broker's task assignor
        by name (`sticky`, or `stickyd` when the broker lists StickydStreamsGroupAssignor in
        group.streams.assignors) and the standby replicas per stateful task. Set before the first
        instance joins (the group needs not exist yet)."""
        resource = ConfigResource(
            ResourceType.GROUP,
            self.app_id,
            incremental_configs=[
                ConfigEntry("streams.assignor.name", assignor, incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("streams.num.standby.replicas", str(standbys), incremental_operation=AlterConfigOpType.SET),
            ],
        )
        admin = AdminClient({"bootstrap.servers": self.bootstrap})  # kept alive until the futures are done
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)

    def output_counts(self) -> dict[str, int]:
        """The last count written per word (the output topic read from the start to its end)."""
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": f"{self.app_id}-reader", "enable.auto.commit": False}
        )
        counts: dict[str, int] = {}
        try:
            ends = {}
            for p in range(self.partitions):
                _, high = consumer.get_watermark_offsets(TopicPartition(self.output, p), timeout=10)
                ends[p] = high
            assigned = [TopicPartition(self.output, p, 0) for p in range(self.partitions) if ends[p] > 0]
            consumer.assign(assigned)
            deadline = time.monotonic() + 30
            # done once the position passed each end: with exactly-once the last offsets are
            # transaction markers, which are never delivered
            while time.monotonic() < deadline:
                if all(tp.offset >= ends[tp.partition] for tp in consumer.position(assigned)):
                    break
                message = consumer.poll(0.5)
                if message is None or message.error() is not None:
                    continue
                key, value = message.key(), message.value()
                if key is not None and value is not None:
                    counts[key.decode()] = struct.unpack(">q", value)[0]
        finally:
            consumer.close()
        return counts

    def changelog_sizes(self) -> dict[str, int]:
        """Task `1_p` -> the records in its store's changelog (partition p of
        `<application.id>-word-counts-changelog`): what rebuilding its state elsewhere reads."""
        topic = f"{self.app_id}-word-counts-changelog"
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"{self.app_id}-sizer"})
        try:
            sizes = {}
            for p in range(self.partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                sizes[f"1_{p}"] = high - low
            return sizes
        finally:
            consumer.close()

    def wait_counts(self, timeout_s: float = 60.0) -> dict[str, int]:
        """Waits until the output holds exactly the expected count of every word; returns the last
        reading (the caller asserts it equals `expected`)."""
        deadline = time.monotonic() + timeout_s
        counts = self.output_counts()
        while counts != dict(self.expected) and time.monotonic() < deadline:
            time.sleep(0.5)
            counts = self.output_counts()
        return counts

    # ---- what stickyd answered and what the instances run ----

    def answers(self) -> list[dict[str, Any]]:
        """Every answer any instance's assignor used, oldest first; each response's client ids are
        replaced by instance names."""
        lines: list[dict[str, Any]] = []
        for instance in self.instances.values():
            path = instance.folder / "answers.jsonl"
            if path.exists():
                lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        lines.sort(key=lambda line: line["time_ms"])
        return lines

    def running(self) -> dict[str, dict[str, set[str]]]:
        """Per live instance: the active and standby tasks its threads report."""
        out = {}
        for instance in self.live():
            status = instance.status() or {}
            out[instance.name] = {"active": set(status.get("active", [])), "standby": set(status.get("standby", []))}
        return out

    def wait_stable(self, timeout_s: float = 90.0, quiet_s: float = 2.0) -> Answer:
        """Waits until every live instance is RUNNING, the latest answer covers exactly the live
        instances, asks for no follow-up, every instance runs exactly what it says (active, and
        standby + warm-up), and that has held for quiet_s. Returns that answer."""
        deadline = time.monotonic() + timeout_s
        since: float | None = None
        last = None
        while time.monotonic() < deadline:
            answer = self.latest_answer()
            ok = answer is not None and self._runs(answer)
            if ok and answer is not None and (last is None or answer.time_ms == last.time_ms):
                since = since or time.monotonic()
                if time.monotonic() - since >= quiet_s:
                    return answer
            else:
                since = None
            last = answer
            time.sleep(0.2)
        raise AssertionError(
            f"not stable within {timeout_s:.0f} s: running {self.running()}, latest answer {self.latest_answer()}, "
            f"states {[(i.name, (i.status() or {}).get('state')) for i in self.live()]}"
        )

    def wait_answer(self, predicate: Callable[[Answer], bool], timeout_s: float = 60.0) -> Answer:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for answer in self.all_answers():
                if predicate(answer):
                    return answer
            time.sleep(0.2)
        raise AssertionError(f"no such answer within {timeout_s:.0f} s; latest {self.latest_answer()}")

    def all_answers(self) -> list[Answer]:
        return [Answer.of(line) for line in self.answers()]

    def latest_answer(self) -> Answer | None:
        answers = self.all_answers()
        return answers[-1] if answers else None

    def _runs(self, answer: Answer) -> bool:
        live = self.live()
        if {i.name for i in live} != set(answer.assignment) or answer.followup:
            return False
        for instance in live:
            status = instance.status()
            if status is None or status.get("state") != "RUNNING":
                return False
            wanted = answer.assignment[instance.name]
            if set(status["active"]) != wanted["active"]:
                return False
            if set(status["standby"]) != wanted["standby"] | wanted["warmup"]:
                return False
        return True


@dataclass(frozen=True)
class Answer:
    """One answer stickyd gave, keyed by instance name: `assignment` (what runs now: active,
    standby, warmup), `target` (active, standby), `followup`, `stats`, `request`, `time_ms`."""

    time_ms: int
    assignment: dict[str, dict[str, set[str]]]
    target: dict[str, dict[str, set[str]]]
    followup: bool
    stats: dict[str, Any]
    request: dict[str, Any]
    response: dict[str, Any]
    names: dict[str, str]

    @staticmethod
    def of(line: dict[str, Any]) -> Answer:
        names: dict[str, str] = line["instances"]
        response = line["response"]
        assignment = {
            names[pid]: {kind: set(tasks) for kind, tasks in parts.items()}
            for pid, parts in response["assignment"].items()
        }
        target = {
            names[pid]: {kind: set(tasks) for kind, tasks in parts.items()} for pid, parts in response["target"].items()
        }
        return Answer(
            time_ms=line["time_ms"],
            assignment=assignment,
            target=target,
            followup=response["followup_rebalance"],
            stats=response["stats"],
            request=line["request"],
            response=response,
            names=names,
        )

    def active_owner(self, of: str = "assignment") -> dict[str, str]:
        parts = self.assignment if of == "assignment" else self.target
        return {task: name for name, p in parts.items() for task in p["active"]}

    def __repr__(self) -> str:
        return f"Answer(t={self.time_ms}, followup={self.followup}, assignment={self.assignment})"


WORDS_PER_TASK = 8


def skewed_word(n: int, partitions: int, skew: float) -> str:
    """The word of record n under a Zipf skew over the repartition topic's partitions: a
    deterministic, evenly spread choice (the golden-ratio sequence) of the partition p with weight
    1/(p+1)^skew, then one of that partition's words in turn."""
    weights = [1 / (p + 1) ** skew for p in range(partitions)]
    target = ((n * 0.6180339887498949) % 1.0) * sum(weights)
    partition = 0
    while partition < partitions - 1 and target >= weights[partition]:
        target -= weights[partition]
        partition += 1
    words = _words_of(partitions)[partition]
    return words[(n // partitions) % len(words)]


_WORDS: dict[int, list[list[str]]] = {}


def _words_of(partitions: int) -> list[list[str]]:
    """Per repartition partition, WORDS_PER_TASK words that Kafka's default partitioner (murmur2
    of the serialized String key) puts there."""
    if partitions not in _WORDS:
        out: list[list[str]] = [[] for _ in range(partitions)]
        n = 0
        while min(len(words) for words in out) < WORDS_PER_TASK:
            word = f"w{n}"
            words = out[(murmur2(word.encode()) & 0x7FFFFFFF) % partitions]
            if len(words) < WORDS_PER_TASK:
                words.append(word)
            n += 1
        _WORDS[partitions] = out
    return _WORDS[partitions]


@contextmanager
def streams_app(bootstrap: str, folder: Path, **kwargs: Any) -> Iterator[StreamsApp]:
    """A StreamsApp with its topics; every instance still running is stopped on exit."""
    app = StreamsApp(bootstrap=bootstrap, folder=folder, **kwargs)
    app.create_topics()
    try:
        yield app
    finally:
        app.stop_all()
