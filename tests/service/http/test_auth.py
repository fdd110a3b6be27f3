"""Authentication and tenants against a real `stickyd serve` with STICKYD_AUTH=required, on SQLite
and on the session's PostgreSQL server: tokens come from the real `stickyd tokens create` command
(same database settings as the service), requests without a live token get 401, a group is
invisible (404) to another tenant's token, a revoked token gets 401 at once, and no token ever
appears in the service's log."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.service.http.auth import Unauthorized, auth_required, bearer_token, listens_on_loopback
from stickyd.service.settings import Settings
from stickyd.service.store import open_database
from stickyd.service.store.tokens import TokenRow

TOKEN_LINE = re.compile(r"stk_[A-Za-z0-9_-]{43}\n")
CONSUMER = {"topics": {"orders": 4}, "members": [{"id": "a", "topics": ["orders"]}, {"id": "b", "topics": ["orders"]}]}
STREAMS = {"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "a"}]}
_databases = itertools.count()


@dataclass
class AuthService:
    running: ServiceProcess
    env: dict[str, str]
    """the database settings the service runs with (the CLI uses the same)."""
    issued: list[str]
    """every token this module created, to look for in the log."""

    def tokens(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "stickyd.cli", "tokens", *args]
        return subprocess.run(command, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=120)

    def new_token(self, tenant: str) -> str:
        created = self.tokens("create", "--tenant", tenant)
        assert created.returncode == 0, created.stderr
        assert TOKEN_LINE.fullmatch(created.stdout), "stdout must be the token alone"
        token = created.stdout.strip()
        self.issued.append(token)
        return token

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.running.url, headers=headers, timeout=60)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthService]:
    env = {"STICKYD_DATA_DIR": str(tmp_path_factory.mktemp(f"auth-{request.param}")), "STICKYD_AUTH": "required"}
    if request.param == "postgresql":
        env["STICKYD_DATABASE_URL"] = request.getfixturevalue("postgres").create_database(
            f"stickyd_auth_{next(_databases)}"
        )
    with running_service({**env, "STICKYD_WORKERS": "1"}) as running:
        auth = AuthService(running, env, [])
        yield auth
        log = running.log_text()
        leaked = [t for t in auth.issued if t in log or t[4:] in log]
        assert not leaked, "a token appeared in the service's log"


def _rebalance(client: httpx.Client, group: str, generation: int) -> httpx.Response:
    return client.post(
        f"/v1/groups/{group}/rebalance", json={"kind": "consumer", "generation": generation, "problem": CONSUMER}
    )


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["field"] == "authorization"


def test_without_a_live_token_every_assignment_and_group_call_gets_401(service: AuthService) -> None:
    """No header, another scheme, an empty bearer or a token nobody created: 401 naming
    `authorization`, on the assign endpoints and every group route; health and docs stay open."""
    headers_tried: list[dict[str, str]] = [
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer stk_this-token-was-never-created"},
    ]
    with service.http() as client:
        for headers in headers_tried:
            _refused(client.post("/v1/assign/consumer", json=CONSUMER, headers=headers))
            _refused(client.post("/v1/assign/streams", json=STREAMS, headers=headers))
            _refused(client.get("/v1/groups", headers=headers))
            _refused(client.get("/v1/groups/g", headers=headers))
            _refused(client.get("/v1/groups/g/history", headers=headers))
            _refused(client.post("/v1/groups/g/leaving", json={"members": ["a"]}, headers=headers))
            _refused(client.delete("/v1/groups/g", headers=headers))
            _refused(
                client.post(
                    "/v1/groups/g/rebalance",
                    json={"kind": "consumer", "generation": -1, "problem": CONSUMER},
                    headers=headers,
                )
            )
        assert client.get("/v1/health").status_code == 200
        assert client.get("/docs").status_code == 200
        metrics = client.get("/metrics").text
    counted = re.search(r'stickyd_rejected_total\{endpoint="/v1/assign/consumer",status="401"\} ([0-9.]+)', metrics)
    assert counted and float(counted.group(1)) >= len(headers_tried), "401s are counted"


def test_a_token_answers_for_its_tenant_only_another_tenants_token_gets_404(service: AuthService) -> None:
    """Tenant acme's group is invisible to tenant globex: show, history, leaving, forget are 404,
    its list is empty of it, and globex's own group of the same id is a separate group."""
    acme, globex = service.new_token("acme"), service.new_token("globex")
    with service.http(acme) as a, service.http(globex) as g:
        assert a.post("/v1/assign/consumer", json=CONSUMER).status_code == 200
        assert _rebalance(a, "billing", -1).json()["generation"] == 0
        assert _rebalance(a, "billing", 0).json()["generation"] == 1
        assert g.get("/v1/groups/billing").status_code == 404
        assert g.get("/v1/groups/billing/history").status_code == 404
        assert g.post("/v1/groups/billing/leaving", json={"members": ["a"]}).status_code == 404
        assert g.delete("/v1/groups/billing").status_code == 404
        assert "billing" not in [x["group_id"] for x in g.get("/v1/groups").json()["groups"]]
        assert _rebalance(g, "billing", -1).json()["generation"] == 0  # globex's own group
        assert a.get("/v1/groups/billing").json()["generation"] == 1  # acme's untouched
        assert [x["group_id"] for x in a.get("/v1/groups").json()["groups"]] == ["billing"]


def test_a_revoked_token_gets_401_at_once_and_other_tokens_keep_working(service: AuthService) -> None:
    first, second = service.new_token("initech"), service.new_token("initech")
    with service.http(first) as one, service.http(second) as two:
        assert one.get("/v1/groups").status_code == 200
        revoked = service.tokens("revoke", first)
        assert revoked.returncode == 0, revoked.stderr
        assert first not in revoked.stdout + revoked.stderr
        _refused(one.get("/v1/groups"))
        _refused(one.post("/v1/assign/consumer", json=CONSUMER))
        assert two.get("/v1/groups").status_code == 200
    again = service.tokens("revoke", "stk_never-created")
    assert again.returncode == 2 and "no such token" in again.stderr


def test_tokens_are_stored_only_as_digests(service: AuthService) -> None:
    token = service.new_token("hooli")
    database = open_database(service.env["STICKYD_DATA_DIR"], service.env.get("STICKYD_DATABASE_URL"))
    try:
        with database.reading() as session:
            rows = session.query(TokenRow).all()
    finally:
        database.close()
    stored = [(r.token_hash, r.tenant) for r in rows]
    assert any(tenant == "hooli" for _, tenant in stored)
    assert all(token not in digest and len(digest) == 64 for digest, _ in stored)


def test_an_invalid_tenant_name_is_refused_by_the_cli(service: AuthService) -> None:
    created = service.tokens("create", "--tenant", "no spaces/please")
    assert created.returncode == 2 and created.stdout == ""
    assert "--tenant" in created.stderr


@pytest.mark.parametrize(
    ("host", "auth", "required"),
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("10.1.2.3", None, True),
        ("stickyd.internal", None, True),
        ("0.0.0.0", "off", False),
        ("127.0.0.1", "required", True),
    ],
)
def test_auth_is_required_beyond_loopback_unless_set(host: str, auth: Any, required: bool) -> None:
    """STICKYD_AUTH unset: required whenever the service listens beyond loopback (--host 0.0.0.0
    included), off on loopback; set, it wins."""
    assert auth_required(Settings(host=host, auth=auth)) is required
    assert listens_on_loopback(host) is (host in ("127.0.0.1", "localhost", "::1"))


def test_bearer_header_parsing_never_returns_a_wrong_token() -> None:
    assert bearer_token("Bearer stk_abc") == "stk_abc"
    assert bearer_token("bearer   stk_abc  ") == "stk_abc"
    for bad in (None, "", "Bearer", "Token stk_abc", "Bearer " + "x" * 600, "Bearer stk_é"):
        with pytest.raises(Unauthorized) as refused:
            bearer_token(bad)
        assert "stk_abc" not in str(refused.value)


def test_the_docker_image_and_compose_run_with_auth_on() -> None:
    """The image listens on all interfaces, so auth must be on there (by default and said so)."""
    root = Path(__file__).resolve().parents[3]
    assert "STICKYD_AUTH=required" in (root / "Dockerfile").read_text()
    assert 'STICKYD_AUTH: "required"' in (root / "docker-compose.yml").read_text()
