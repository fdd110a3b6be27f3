"""The web page's tests: a real `stickyd serve` with tokens required, groups made through the API
by two tenants, and headless chromium (the machine's own, driven by Playwright) that can resolve
no host but the service's loopback address."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess, running_service

CHROMIUM = "/usr/bin/chromium"
NO_NETWORK = "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    f"--host-resolver-rules={NO_NETWORK}",
]


def launch_chromium(playwright: Any) -> Any:
    """The machine's chromium (Debian's package; scripts/test installs it), never a download."""
    assert Path(CHROMIUM).exists(), "chromium is missing: scripts/test installs Debian's chromium package"
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def new_token(env: dict[str, str], tenant: str) -> str:
    """A token from the real `stickyd tokens create`, with the service's database settings."""
    command = [sys.executable, "-m", "stickyd.cli", "tokens", "create", "--tenant", tenant]
    created = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


@dataclass
class Site:
    running: ServiceProcess
    token: str
    """the tenant `ops`, whose groups the tests look at."""
    other_token: str
    """the tenant `elsewhere`, which has a group of its own."""
    requested: list[str] = field(default_factory=list)
    """every URL the browser asked for, in every test."""

    @property
    def url(self) -> str:
        return self.running.url

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


ORDERS = {"orders": 12, "payments": 4}


def consumer_problem(members: list[str]) -> dict[str, Any]:
    return {"topics": ORDERS, "members": [{"id": m, "topics": sorted(ORDERS)} for m in members]}


def rebalance(client: httpx.Client, group: str, generation: int, problem: dict[str, Any], **extra: Any) -> int:
    kind = "streams" if "clients" in problem else "consumer"
    body = {"kind": kind, "generation": generation, "problem": problem, **extra}
    answered = client.post(f"/v1/groups/{group}/rebalance", json=body)
    assert answered.status_code == 200, answered.text
    generation_now: int = answered.json()["generation"]
    return generation_now


def make_groups(site: Site) -> None:
    """`orders-app` (consumer): four members join, one is lost and held in grace, one leaves, one
    joins; `streams-app` (Streams); and the other tenant's `hidden-app`."""
    with site.http() as ops:
        g = rebalance(ops, "orders-app", -1, consumer_problem(["ann", "bob", "cat"]))
        g = rebalance(ops, "orders-app", g, consumer_problem(["ann", "bob", "cat", "dan"]))
        g = rebalance(ops, "orders-app", g, consumer_problem(["ann", "bob", "cat"]), grace_ms=3_600_000)
        g = rebalance(ops, "orders-app", g, consumer_problem(["ann", "bob", "cat", "eve"]), leaving=["bob"])
        streams = {
            "subtopologies": [{"id": "0", "partitions": 6, "stateful": True}, {"id": "1", "partitions": 4}],
            "clients": [{"id": "s1"}, {"id": "s2"}],
            "config": {"num_standby_replicas": 1},
        }
        g = rebalance(ops, "streams-app", -1, streams)
        rebalance(ops, "streams-app", g, {**streams, "clients": [{"id": "s1"}, {"id": "s2"}, {"id": "s3"}]})
    with site.http(site.other_token) as elsewhere:
        rebalance(elsewhere, "hidden-app", -1, consumer_problem(["zed"]))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    env = {"STICKYD_DATA_DIR": str(tmp_path_factory.mktemp("ui-store")), "STICKYD_AUTH": "required"}
    token, other = new_token(env, "ops"), new_token(env, "elsewhere")
    with running_service({**env, "STICKYD_WORKERS": "1"}) as running:
        made = Site(running, token, other)
        make_groups(made)
        yield made


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage: no token yet) that records what it asks for and fails
    the test on a script error."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("request", lambda request: site.requested.append(request.url))
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert not errors, f"script errors on the page: {errors}"


def use_token(page: Any, site: Site, token: str | None = None) -> None:
    """Open the page and enter the token in its form, as an operator does."""
    page.goto(f"{site.url}/ui/")
    page.wait_for_selector("body[data-ready]")
    page.fill("#token-input", token or site.token)
    page.click("#token-form button[type=submit]")
