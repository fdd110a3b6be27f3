"""What a running `stickyd serve` counts, read from its /metrics page as Prometheus scrapes it."""

from __future__ import annotations

import httpx

from stickyd.cli.child_service import ServiceProcess


def metric(service: ServiceProcess, prefix: str) -> float:
    """The sum of every sample whose line starts with `prefix` (a name, or a name and its first labels)."""
    text = httpx.get(f"{service.url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def requests_to(service: ServiceProcess, endpoint: str) -> float:
    """How many requests `endpoint` (e.g. "/v1/assign/consumer") has answered, whatever their status."""
    return metric(service, f'stickyd_requests_total{{endpoint="{endpoint}"')
