"""Schemathesis against the OpenAPI schema of a real `stickyd serve`: no 5xx, every 4xx has a
detail. Bounded (examples per operation) so that it runs in CI in well under 2 minutes."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.cli.child_service import ServiceProcess

POSITIVE, NEGATIVE = schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE
CASES = [
    ("POST /v1/assign/consumer", POSITIVE),
    ("POST /v1/assign/consumer", NEGATIVE),
    ("POST /v1/assign/streams", POSITIVE),
    ("POST /v1/assign/streams", NEGATIVE),
    ("POST /v1/groups/{group_id}/what-if", POSITIVE),
    ("POST /v1/groups/{group_id}/what-if", NEGATIVE),
    ("GET /v1/groups/{group_id}/explain", POSITIVE),
    ("GET /v1/groups/{group_id}/explain", NEGATIVE),
    ("GET /v1/health", POSITIVE),
    ("GET /metrics", POSITIVE),
]


@pytest.fixture(scope="module")
def operations(service: ServiceProcess) -> dict[str, schemathesis.APIOperation]:
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    found = {}
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an invalid operation fails the test here
        found[f"{operation.method.upper()} {operation.path}"] = operation
    return found


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_no_input_makes_the_server_fail(
    service: ServiceProcess,
    operations: dict[str, schemathesis.APIOperation],
    name: str,
    mode: schemathesis.GenerationMode,
) -> None:
    operation = operations[name]

    @settings(max_examples=60 if "assign" in name else 10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy(generation_mode=mode))
        response = case.call(base_url=service.url, timeout=30)
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert response.json()["detail"], response.text

    fuzz()
