"""`/docs` and `/redoc` render in headless chromium with every host but the service's loopback
address unresolvable: their scripts and styles are served by stickyd itself, not a CDN."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess

NO_NETWORK = "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"


def _rendered_dom(url: str) -> str:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: scripts/test installs Debian's chromium package"
    with tempfile.TemporaryDirectory(prefix="stickyd-chromium-") as profile:
        done = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                f"--host-resolver-rules={NO_NETWORK}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    return done.stdout


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_no_asset_from_another_host(service: ServiceProcess, page: str) -> None:
    html = httpx.get(f"{service.url}{page}", timeout=10).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/") for a in assets), assets
    for asset in assets:
        assert httpx.get(f"{service.url}{asset}", timeout=10).status_code == 200, asset


def test_swagger_ui_renders_the_operations_without_network(service: ServiceProcess) -> None:
    dom = _rendered_dom(f"{service.url}/docs")
    # Swagger UI built the page from /openapi.json: one opblock per operation
    assert 'class="swagger-ui' in dom and "opblock" in dom
    assert "/v1/assign/consumer" in dom and "/v1/assign/streams" in dom


def test_redoc_renders_the_operations_without_network(service: ServiceProcess) -> None:
    dom = _rendered_dom(f"{service.url}/redoc")
    assert "Assign a consumer group's partitions" in dom or "Assign a consumer group&#39;s partitions" in dom
    assert "/v1/assign/streams" in dom
