"""What the routes share, built once per app from its settings: the solver pools, the limits, the
metrics, and the one place that records an answer (metrics and the access log line)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from fastapi import Request

from stickyd.client.kafka_settings import kafka_settings
from stickyd.service.http.metrics import Metrics
from stickyd.service.processes.fork_server import ForkServer
from stickyd.service.processes.job import JobResult, Limits
from stickyd.service.processes.pool import SolverPool, Timing
from stickyd.service.settings import Settings
from stickyd.service.watch.rates import LiveRates
from stickyd.service.watch.watcher import Watcher

log = logging.getLogger("stickyd.access")


class Services:
    def __init__(self, settings: Settings, forks: ForkServer | None = None) -> None:
        """`forks`: a fork server already started (the CLI starts it before importing the app)."""
        self.settings = settings
        self.forks = forks or ForkServer()
        self.metrics = Metrics()
        self._series_of: dict[tuple[str, str, int, str], tuple[Any, Any, Any, Any]] = {}
        cap = settings.worker_memory_mb * 1024 * 1024
        prefault = min(settings.worker_prefault_mb, settings.worker_memory_mb // 2) * 1024 * 1024
        self.solvers = SolverPool(settings.workers, cap, name="solver", prefault_bytes=prefault, forks=self.forks)
        self.fallback = SolverPool(
            settings.fallback_workers, cap, name="fallback", prefault_bytes=prefault, forks=self.forks
        )
        for pool in (self.solvers, self.fallback):
            pool.on_restart = self._count_restart(pool.name)
        self.limits = Limits(
            max_partitions=settings.max_partitions,
            max_members=settings.max_members,
            default_time_limit_ms=settings.default_time_limit_ms,
            max_time_limit_ms=settings.max_time_limit_ms,
            max_subscriptions=settings.max_subscriptions,
            max_task_replicas=settings.max_task_replicas,
            max_subtopology_clients=settings.max_subtopology_clients,
            floor_scale=settings.floor_scale,
        )
        self.watcher = _watcher(settings, self.metrics)

    def _count_restart(self, pool: str) -> Callable[[str], None]:
        def count(reason: str) -> None:
            self.metrics.worker_restarts.labels(pool, reason).inc()

        return count

    @property
    def ready(self) -> bool:
        return self.solvers.ready and self.fallback.ready

    @property
    def restarts(self) -> int:
        return self.solvers.restarts + self.fallback.restarts

    async def start(self) -> None:
        if self.watcher is not None:
            self.watcher.start()
        await self.solvers.start()
        await self.fallback.start()

    async def close(self) -> None:
        stopping = asyncio.to_thread(self.watcher.stop) if self.watcher is not None else asyncio.sleep(0)
        await asyncio.gather(self.solvers.close(), self.fallback.close(), stopping)
        await self.forks.close()

    def live_rates(self, body: bytes | dict[str, Any]) -> LiveRates | None:
        """The watcher's rates when the request may ask for them (`"live"` in its bytes, or its
        parsed partition_weights), else None: a request without it carries nothing more."""
        if self.watcher is None:
            return None
        wants = body.get("partition_weights") == "live" if isinstance(body, dict) else b'"live"' in body
        return self.watcher.rates if wants else None

    def record(self, endpoint: str, result: JobResult, elapsed: float, timing: Timing) -> None:
        requests, latency, queue_wait, solve = self._series(endpoint, result.strategy, result.status, result.solver)
        requests.inc()
        latency.observe(elapsed)
        queue_wait.observe(timing.queue_wait_s)
        if solve is not None:
            solve.observe(result.solve_ms / 1000)
            if result.fallback_cause is not None:
                self.metrics.fallbacks.labels(endpoint, result.fallback_cause.value).inc()
        if result.status != 200:
            self.metrics.rejected.labels(endpoint, str(result.status)).inc()
        log.info(
            "endpoint=%s status=%d partitions=%d members=%d strategy=%s solver=%s optimal=%s fallback=%s "
            "queue_ms=%.1f ms=%.1f",
            endpoint,
            result.status,
            result.partitions,
            result.members,
            result.strategy,
            result.solver,
            result.optimal,
            result.fallback,
            timing.queue_wait_s * 1000,
            elapsed * 1000,
        )

    def _series(self, endpoint: str, strategy: str, status: int, solver: str) -> tuple[Any, Any, Any, Any]:
        """The labelled series one answer updates, looked up once per label combination (a
        `labels()` call takes a lock and builds its key each time)."""
        key = (endpoint, strategy, status, solver)
        found = self._series_of.get(key)
        if found is None:
            m = self.metrics
            found = (
                m.requests.labels(endpoint, strategy, str(status)),
                m.latency.labels(endpoint, strategy),
                m.queue_wait.labels(endpoint),
                m.solve.labels(endpoint, solver) if status == 200 else None,  # no empty series for a 4xx
            )
            self._series_of[key] = found
        return found


def _watcher(settings: Settings, metrics: Metrics) -> Watcher | None:
    if not settings.watch_bootstrap_servers:
        return None
    kafka = kafka_settings(settings.watch_bootstrap_servers, settings.watch_command_config, given=settings.watch_config)
    return Watcher(kafka, settings.watch_interval_s, settings.watch_window_s, metrics, settings.log_level == "debug")


async def get_services(request: Request) -> Services:
    """Async, so that FastAPI does not hop to its thread pool to call it."""
    services: Services = request.app.state.services
    return services
