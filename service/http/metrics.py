"""Prometheus metrics, one registry per app so that tests can build several apps."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "stickyd_requests",
            "Requests by endpoint, strategy and HTTP status.",
            ["endpoint", "strategy", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "stickyd_request_seconds",
            "Request latency by endpoint and strategy.",
            ["endpoint", "strategy"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.solve = Histogram(
            "stickyd_solve_seconds",
            "Solver time by endpoint and solver.",
            ["endpoint", "solver"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "stickyd_fallbacks",
            "Answers given by the fallback heuristic.",
            ["endpoint", "reason"],
            registry=self.registry,
        )
        self.rejected = Counter(
            "stickyd_rejected",
            "Requests rejected before solving (422, 413).",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.worker_restarts = Counter(
            "stickyd_worker_restarts",
            "Solver processes replaced, by pool (solver, fallback) and why.",
            ["pool", "reason"],
            registry=self.registry,
        )
        self.cancellations = Counter(
            "stickyd_cancellations",
            "Solves stopped before they finished: the client went away, or the deadline passed.",
            ["endpoint", "reason"],
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "stickyd_queue_wait_seconds",
            "Time a request waited for an idle solver process.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.disconnects = Counter(
            "stickyd_client_disconnects",
            "Clients that went away before their answer, by stage (body, solve).",
            ["endpoint", "stage"],
            registry=self.registry,
        )
        # the watched Kafka cluster (service/watch/): all 0 when the service watches none
        self.watch_sample_age = Gauge(
            "stickyd_watch_sample_age_seconds",
            "Seconds since the watcher last read every partition's end offset (since it started, before "
            "its first success); 0 when the service watches no cluster.",
            registry=self.registry,
        )
        self.watch_samples = Counter(
            "stickyd_watch_samples", "Successful readings of the watched cluster's end offsets.", registry=self.registry
        )
        self.watch_errors = Counter(
            "stickyd_watch_sample_errors",
            "Readings of the watched cluster that failed (unreachable, refused, timed out).",
            registry=self.registry,
        )
        self.watch_partitions = Gauge(
            "stickyd_watch_partitions", "Partitions with a measured produce rate.", registry=self.registry
        )
