"""The service's own thread that reads the watched cluster's end offsets every interval.

One round: Metadata (topics and partition counts, internal topics left out), DescribeTopics for the
topic ids (a topic created again has a new one), ListOffsets (latest) for every partition; then the rates over
the window (service/watch/rates.py) replace the previous ones whole. Kafka's Admin API tells end
offsets, that is records; it does not tell bytes per partition, so a rate is records/s. The thread
never touches the event loop: requests read `rates`, one reference, at no cost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from stickyd.client.cluster_reader import end_offsets
from stickyd.service.http.metrics import Metrics
from stickyd.service.watch.rates import LiveRates, RateWindow
from stickyd.solvers.time_policy import WATCH_REQUEST_TIMEOUT_S, WATCH_STOP_S

log = logging.getLogger(__name__)
librdkafka_log = logging.getLogger(f"{__name__}.librdkafka")
"""librdkafka's own lines (each failed connection, ...), drained every round; shown only with
STICKYD_LOG_LEVEL=debug: the watcher logs a failure once itself, and the metrics count them."""


class WatchUnavailable(RuntimeError):
    """The watcher cannot start (confluent-kafka missing, a setting librdkafka refuses)."""


class Watcher:
    def __init__(
        self, settings: Mapping[str, str], interval_s: float, window_s: float, metrics: Metrics, debug: bool = False
    ) -> None:
        self.settings = dict(settings)
        librdkafka_log.setLevel(logging.DEBUG if debug else logging.CRITICAL + 1)
        self.interval_s = interval_s
        self.metrics = metrics
        self.rates = LiveRates(window_s=0.0)
        """the newest measurement (replaced whole after each round)."""
        self._window = RateWindow(window_s)
        self._ids: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_ok = time.monotonic()
        self._admin: Any = None

    @property
    def bootstrap_servers(self) -> str:
        return self.settings.get("bootstrap.servers", "")

    def start(self) -> None:
        try:
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient
        except ImportError:
            raise WatchUnavailable(
                "watching a Kafka cluster needs confluent-kafka: pip install 'stickyd[kafka]'"
            ) from None
        try:
            client_id = self.settings.get("client.id", "stickyd-watch")
            config: dict[str, Any] = {**self.settings, "client.id": client_id, "logger": librdkafka_log}
            self._admin = AdminClient(config)
        except KafkaException as error:
            raise WatchUnavailable(f"STICKYD_WATCH_*: {error.args[0].str()}") from None
        self._last_ok = time.monotonic()
        self.metrics.watch_sample_age.set_function(lambda: time.monotonic() - self._last_ok)
        self._thread = threading.Thread(target=self._run, name="stickyd-watch", daemon=True)
        self._thread.start()
        log.info("watching %s: end offsets every %g s", self.bootstrap_servers, self.interval_s)

    def stop(self) -> None:
        """Ends the thread (a round in flight finishes first, within its request timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WATCH_STOP_S)

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                self.sample()
                if failing:
                    log.info("reading %s works again", self.bootstrap_servers)
                failing = False
            except Exception as error:  # noqa: BLE001 - a failed round is counted, logged once, retried
                self.metrics.watch_errors.inc()
                if not failing:
                    log.warning("reading %s failed (%s); retrying every %.0f s", self.bootstrap_servers, error,
                                self.interval_s)  # fmt: skip
                failing = True
            self._admin.poll(0)  # librdkafka's log lines (they wait in its queue until polled)
            self._stop.wait(self.interval_s)

    def sample(self) -> None:
        """One round: the end offset of every partition, and the rates they give."""
        timeout = WATCH_REQUEST_TIMEOUT_S
        metadata = self._admin.list_topics(timeout=timeout)
        counts = {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and not name.startswith("__")
        }
        self._ids = self._topic_ids(list(counts), timeout)
        ends = end_offsets(self._admin, counts, timeout)
        now = time.monotonic()
        self._window.add(now, ends)
        rates = self._window.rates()
        ids = {topic_id: name for name, topic_id in self._ids.items()}
        self.rates = LiveRates(rates, ids, self._window.span_s(), time.time())
        self._last_ok = now
        self.metrics.watch_samples.inc()
        self.metrics.watch_partitions.set(sum(1 for per in rates.values() for r in per if r >= 0))

    def _topic_ids(self, topics: list[str], timeout: float) -> dict[str, str]:
        """topic name -> topic id, read every round (a topic created again has a new id)."""
        if not topics:
            return {}
        from confluent_kafka import TopicCollection

        described = self._admin.describe_topics(TopicCollection(topics), request_timeout=timeout)
        return {name: kafka_topic_id(future.result(timeout=timeout + 5).topic_id) for name, future in described.items()}


URL_SAFE = str.maketrans("+/", "-_")


def kafka_topic_id(topic_id: Any) -> str:
    """A topic id as Kafka's Java Uuid.toString() prints it (URL-safe base64, what the KIP-848 plug-in
    sends); confluent-kafka's str() uses the standard alphabet."""
    return str(topic_id).translate(URL_SAFE).rstrip("=")
