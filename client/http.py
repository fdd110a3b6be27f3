"""Python clients for the stickyd HTTP API, sync and async, over httpx.

Connection failures are retried with exponential backoff (tenacity); an HTTP error raises
`StickydError` carrying the server's status and `detail`.

Replicas: the URL may list several services, comma-separated ("http://a:8000,http://b:8000"), as
Kafka's `bootstrap.servers` and the Java plug-ins' `stickyd.url` do. Each attempt then has an equal
share of `timeout`, and a replica that refuses, resets or does not answer in its share moves the
request on to the next one (at least one attempt per replica); one URL behaves as before.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import httpx
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from stickyd.models import ConsumerProblem, ConsumerSolution
from stickyd.models.consumer.compact import MEDIA_TYPE
from stickyd.models.consumer.compact_codec import decode_answer, encode_request
from stickyd.models.group_insight import Explanation, GroupTimeline, WhatIfRequest, WhatIfResponse
from stickyd.models.groups import GroupHistory, GroupList, GroupState, RebalanceResponse
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution

RETRYABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError)
COMPACT = {"content-type": MEDIA_TYPE}


class StickydError(Exception):
    """The service answered with an error status; `detail` is its explanation."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(f"stickyd answered {status}: {detail}")
        self.status = status
        self.detail = detail
        self.field = field


class GenerationConflict(StickydError):
    """409 from a group rebalance: `generation` is the group's current one (-1: none yet)."""

    def __init__(self, detail: str, generation: int) -> None:
        super().__init__(409, detail, "generation")
        self.generation = generation


def _payload(problem: ConsumerProblem | StreamsProblem | dict[str, Any]) -> dict[str, Any]:
    if isinstance(problem, ConsumerProblem | StreamsProblem):
        return problem.model_dump(mode="json", exclude_none=True)
    return problem


def _check(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            body = response.json()
            detail, field = str(body.get("detail", response.text)), body.get("field")
        except ValueError:
            body, detail, field = {}, response.text or response.reason_phrase, None
        if response.status_code == 409 and isinstance(body.get("generation"), int):
            raise GenerationConflict(detail, body["generation"])
        raise StickydError(response.status_code, detail, field)
    data: dict[str, Any] = response.json()
    return data


def _compact_answer(response: httpx.Response, request: dict[str, Any]) -> dict[str, Any]:
    """A compact answer as the contract's answer document; an error status raises as `_check`."""
    if response.status_code >= 400:
        _check(response)
    return decode_answer(response.content, request)


def _retry_policy(attempts: int, moves_on: tuple[type[Exception], ...] = RETRYABLE) -> dict[str, Any]:
    return {
        "retry": retry_if_exception_type(moves_on),
        "stop": stop_after_attempt(attempts),
        "wait": wait_exponential(multiplier=0.05, max=1.0),
        "reraise": True,
    }


def _quote(group_id: str) -> str:
    return quote(group_id, safe="")


def _group_body(
    generation: int,
    problem: ConsumerProblem | StreamsProblem | dict[str, Any],
    kind: str | None,
    leaving: list[str] | None,
    grace_ms: int | None,
) -> dict[str, Any]:
    payload = _payload(problem)
    if isinstance(problem, ConsumerProblem | StreamsProblem):
        # left out: the stored assignment is what they own
        for entry in payload.get("members", []) + payload.get("clients", []):
            for field in ("owned", "active", "standby"):
                if not entry.get(field):
                    entry.pop(field, None)
            if "owned" not in entry and entry.get("generation") == -1:
                entry.pop("generation")
    body: dict[str, Any] = {
        "kind": kind or ("streams" if "clients" in payload else "consumer"),
        "generation": generation,
        "problem": payload,
    }
    if leaving:
        body["leaving"] = leaving
    if grace_ms is not None:
        body["grace_ms"] = grace_ms
    return body


class _Replicas:
    """The base URLs of `url` (comma-separated) and the one the next attempt goes to."""

    def __init__(self, url: str, timeout: float, retries: int) -> None:
        self.bases = [part.strip().rstrip("/") for part in url.split(",") if part.strip()]
        if not self.bases:
            raise ValueError(f"base_url names no URL: {url!r}")
        self.share = timeout / len(self.bases)
        self.attempts = max(retries, len(self.bases))
        self.moves_on = RETRYABLE if len(self.bases) == 1 else (*RETRYABLE, httpx.TimeoutException)
        self.current = 0

    def url(self, path: str) -> str:
        return self.bases[self.current] + path

    def failed(self) -> None:
        self.current = (self.current + 1) % len(self.bases)

    def policy(self) -> dict[str, Any]:
        return _retry_policy(self.attempts, self.moves_on)


def _auth_headers(token: str | None) -> dict[str, str]:
    """`Authorization: Bearer` with `token`, else with STICKYD_TOKEN from the environment, if any."""
    token = token or os.environ.get("STICKYD_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


class StickydClient:
    """`StickydClient("http://127.0.0.1:8000", timeout=5).assign_consumer(problem)`; `token` (a
    `stickyd tokens create` token; default: STICKYD_TOKEN in the environment) is sent as
    `Authorization: Bearer`, for a service that requires tokens. `base_url` may list replicas."""

    def __init__(self, base_url: str, timeout: float = 10.0, retries: int = 3, token: str | None = None) -> None:
        self._replicas = _Replicas(base_url, timeout, retries)
        self._http = httpx.Client(timeout=self._replicas.share, headers=_auth_headers(token))

    def assign_consumer(self, problem: ConsumerProblem | dict[str, Any], *, compact: bool = False) -> ConsumerSolution:
        """`compact`: send the request in the compact encoding (docs/wire-format.md), smaller and
        cheaper to decode for large groups; claims past a topic's partition count are left out."""
        payload = _payload(problem)
        if not compact:
            return ConsumerSolution.model_validate(self._post("/v1/assign/consumer", payload))
        response = self._send("POST", "/v1/assign/consumer", content=encode_request(payload), headers=COMPACT)
        return ConsumerSolution.model_validate(_compact_answer(response, payload))

    def assign_streams(self, problem: StreamsProblem | dict[str, Any]) -> StreamsSolution:
        return StreamsSolution.model_validate(self._post("/v1/assign/streams", _payload(problem)))

    def health(self) -> dict[str, Any]:
        return self._get("/v1/health")

    def rebalance_group(
        self,
        group_id: str,
        generation: int,
        problem: ConsumerProblem | StreamsProblem | dict[str, Any],
        kind: str | None = None,
        leaving: list[str] | None = None,
        grace_ms: int | None = None,
    ) -> RebalanceResponse:
        """The group's next generation; raises GenerationConflict when `generation` is not its current one."""
        body = _group_body(generation, problem, kind, leaving, grace_ms)
        return RebalanceResponse.model_validate(self._post(f"/v1/groups/{_quote(group_id)}/rebalance", body))

    def group(self, group_id: str) -> GroupState:
        return GroupState.model_validate(self._get(f"/v1/groups/{_quote(group_id)}"))

    def groups(self) -> GroupList:
        return GroupList.model_validate(self._get("/v1/groups"))

    def group_history(self, group_id: str, limit: int = 100) -> GroupHistory:
        return GroupHistory.model_validate(self._get(f"/v1/groups/{_quote(group_id)}/history", {"limit": limit}))

    def mark_leaving(self, group_id: str, members: list[str]) -> GroupState:
        return GroupState.model_validate(self._post(f"/v1/groups/{_quote(group_id)}/leaving", {"members": members}))

    def group_timeline(self, group_id: str, limit: int = 100) -> GroupTimeline:
        return GroupTimeline.model_validate(self._get(f"/v1/groups/{_quote(group_id)}/timeline", {"limit": limit}))

    def what_if(self, group_id: str, changes: WhatIfRequest | dict[str, Any]) -> WhatIfResponse:
        """stickyd's answer to the group with `changes`, beside its current one; nothing is stored."""
        body = changes.model_dump(exclude_none=True) if isinstance(changes, WhatIfRequest) else changes
        return WhatIfResponse.model_validate(self._post(f"/v1/groups/{_quote(group_id)}/what-if", body))

    def explain(self, group_id: str, topic: str, partition: int) -> Explanation:
        """Why partition `partition` of `topic` (Streams: task `<topic>_<partition>`) is where it is."""
        params = {"topic": topic, "partition": partition}
        return Explanation.model_validate(self._get(f"/v1/groups/{_quote(group_id)}/explain", params))

    def forget_group(self, group_id: str) -> None:
        response = self._send("DELETE", f"/v1/groups/{_quote(group_id)}")
        if response.status_code != 204:
            _check(response)

    def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return _check(self._send("GET", path, params=params))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _check(self._send("POST", path, json=body))

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request, retried (on the next replica, when there are several) while it cannot connect."""
        for attempt in Retrying(**self._replicas.policy()):
            with attempt:
                try:
                    return self._http.request(method, self._replicas.url(path), **kwargs)
                except self._replicas.moves_on:
                    self._replicas.failed()
                    raise
        raise RuntimeError("unreachable")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> StickydClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncStickydClient:
    """The same over `httpx.AsyncClient`: `await client.assign_consumer(problem)`."""

    def __init__(self, base_url: str, timeout: float = 10.0, retries: int = 3, token: str | None = None) -> None:
        self._replicas = _Replicas(base_url, timeout, retries)
        self._http = httpx.AsyncClient(timeout=self._replicas.share, headers=_auth_headers(token))

    async def assign_consumer(self, problem: ConsumerProblem | dict[str, Any]) -> ConsumerSolution:
        return ConsumerSolution.model_validate(await self._post("/v1/assign/consumer", _payload(problem)))

    async def assign_streams(self, problem: StreamsProblem | dict[str, Any]) -> StreamsSolution:
        return StreamsSolution.model_validate(await self._post("/v1/assign/streams", _payload(problem)))

    async def health(self) -> dict[str, Any]:
        return _check(await self._send("GET", "/v1/health"))

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _check(await self._send("POST", path, json=body))

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async for attempt in AsyncRetrying(**self._replicas.policy()):
            with attempt:
                try:
                    return await self._http.request(method, self._replicas.url(path), **kwargs)
                except self._replicas.moves_on:
                    self._replicas.failed()
                    raise
        raise RuntimeError("unreachable")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncStickydClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
