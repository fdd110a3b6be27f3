from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.process import ServiceProcess, running_service


@pytest.fixture(scope="session")
def service() -> Iterator[ServiceProcess]:
    """A real `stickyd serve` on a free loopback port, stopped after the session."""
    with running_service({"STICKYD_WORKERS": "2", "STICKYD_MAX_PARTITIONS": "200000"}) as running:
        yield running
