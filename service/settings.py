"""Service settings from the environment (prefix STICKYD_), with sane defaults."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from stickyd.solvers.time_policy import (
    BODY_TIMEOUT_S,
    DEFAULT_TIME_LIMIT_MS,
    FALLBACK_LIMIT_MS,
    HEADER_TIMEOUT_S,
    MAX_TIME_LIMIT_MS,
    RESPONSE_MARGIN_MS,
    SHUTDOWN_GRACE_S,
    WATCH_INTERVAL_S,
    WATCH_WINDOW_S,
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STICKYD_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=256)
    """solver processes."""
    default_time_limit_ms: int = Field(DEFAULT_TIME_LIMIT_MS, ge=1)
    max_time_limit_ms: int = Field(MAX_TIME_LIMIT_MS, ge=1)
    """a request's time_limit_ms is capped to this."""
    max_partitions: int = Field(2_000_000, ge=1)
    max_members: int = Field(20_000, ge=1)
    max_subscriptions: int = Field(2_000_000, ge=1)
    """consumer: member x subscribed topic pairs, summed over members (more gets 413)."""
    max_task_replicas: int = Field(1_000_000, ge=1)
    """Streams: tasks plus, per stateful task, its standby replicas (more gets 413)."""
    max_subtopology_clients: int = Field(1_000_000, ge=1)
    """Streams: subtopologies x clients (more gets 413)."""
    max_body_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    fallback_workers: int = Field(1, ge=1, le=64)
    """processes that answer requests whose solve overran (the heuristic fallback: KIP-54 or the quick fill)."""
    response_margin_ms: int = Field(RESPONSE_MARGIN_MS, ge=30)
    """a solve still running this long past its request's deadline is stopped and the fallback pool answers."""
    floor_scale: float = Field(1.0, ge=0)
    """the per-size floor (service/admission/promise_floor.py, measured on 2 cores) is multiplied by this;
    0: no floor."""
    fallback_limit_ms: int = Field(FALLBACK_LIMIT_MS, ge=1)
    """how long past that the fallback pool may take before the request gets a 503."""
    worker_memory_mb: int = Field(4096, ge=256)
    """a solver process above this resident size after a job is replaced by a fresh one."""
    worker_prefault_mb: int = Field(0, ge=0, le=1023)
    """a fresh solver process touches this much heap before it is ready (at most half of
    worker_memory_mb), so its first large job does not page-fault it in; 0: off. A 1M-partition
    job uses about 0.5-0.8 GB; under 1 GB, the heap keeps all of it (trimmed only past 2 GB free)."""
    shutdown_grace_s: float = Field(SHUTDOWN_GRACE_S, ge=0)
    """on SIGTERM, requests in flight get this long to finish; then their solves are stopped."""
    header_timeout_s: float = Field(HEADER_TIMEOUT_S, gt=0)
    """a connection whose request headers are not complete this long after it opened is closed."""
    body_timeout_s: float = Field(BODY_TIMEOUT_S, gt=0)
    """a request body must arrive completely within this many seconds of its headers, else 408."""
    auth: Literal["required", "off"] | None = None
    """bearer tokens required (`required`) or not (`off`); unset: required unless host is loopback."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    data_dir: Path = Path("./stickyd-data")
    """where the embedded SQLite database lives when no database_url is set."""
    database_url: str | None = None
    """e.g. postgresql://user:password@host:5432/stickyd (psycopg 3); default: SQLite in data_dir."""
    history_max_generations: int = Field(100, ge=1)
    """generations of each group kept in its history."""
    history_max_age_s: float = Field(7 * 86_400, gt=0)
    """history older than this is dropped (the current generation always stays)."""
    watch_bootstrap_servers: str | None = None
    """Kafka's bootstrap.servers of the one cluster whose partitions' produce rates `partition_weights:
    "live"` reads (and GET /v1/cluster/groups shows); unset: the service watches no cluster."""
    watch_command_config: Path | None = None
    """a .properties file of Kafka client settings for it (security.protocol, sasl.*, ssl.*), as
    Kafka's tools take with --command-config."""
    watch_config: dict[str, str] = Field(default_factory=dict)
    """more Kafka client settings, as a JSON object (they win over the file's)."""
    watch_interval_s: float = Field(WATCH_INTERVAL_S, ge=0.1)
    """how often the end offsets are read."""
    watch_window_s: float = Field(WATCH_WINDOW_S, gt=0)
    """the span a rate is measured over."""


@lru_cache
def get_settings() -> Settings:
    return Settings()
