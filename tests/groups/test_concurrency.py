"""Fencing across processes: ten callers spread over two `stickyd serve` processes on one store
rebalance one group 50 times, each retrying after a 409 with the generation it was told."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import running_service
from stickyd.client.http import StickydClient
from tests.groups.conftest import Services, ok, rebalance

CALLERS = 10
SUCCESSES_EACH = 5
PROBLEM = {"topics": {"orders": 24}, "members": [{"id": f"m{i}", "topics": ["orders"]} for i in range(4)]}


@pytest.mark.parametrize("store", ["postgresql"])
def test_fifty_rebalances_from_ten_callers_on_two_services_get_fifty_consecutive_generations(
    group_services: Services, store: str
) -> None:
    backend, first = group_services.get(store)
    group = f"contended-{store}"
    with running_service(backend.env) as second:
        urls = [first.url, second.url]
        won: list[int] = []
        conflicts: list[int] = []
        failures: list[str] = []
        lock = threading.Lock()

        def caller(n: int) -> None:
            seen = -1
            with httpx.Client(base_url=urls[n % 2], timeout=60) as http:
                wins = 0
                while wins < SUCCESSES_EACH and not failures:
                    response = rebalance(http, group, seen, PROBLEM)
                    body: dict[str, Any] = response.json()
                    if response.status_code == 200:
                        wins += 1
                        seen = body["generation"]
                        with lock:
                            won.append(seen)
                    elif response.status_code == 409:
                        seen = body["generation"]
                        with lock:
                            conflicts.append(seen)
                    else:
                        failures.append(f"{response.status_code}: {response.text}")

        threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert len(won) == CALLERS * SUCCESSES_EACH
    assert sorted(won) == list(range(CALLERS * SUCCESSES_EACH)), "each generation handed out exactly once"
    assert conflicts, "the callers did contend"
    with httpx.Client(base_url=first.url) as http:
        state = http.get(f"/v1/groups/{group}").json()
        assert state["generation"] == CALLERS * SUCCESSES_EACH - 1
        history = http.get(f"/v1/groups/{group}/history", params={"limit": 1000}).json()["generations"]
        assert [h["generation"] for h in history] == list(reversed(range(CALLERS * SUCCESSES_EACH)))


@pytest.mark.parametrize("store", ["postgresql"])
def test_a_group_rebalanced_on_one_replica_is_listed_and_continued_on_the_other_after_it_stops(
    group_services: Services, store: str
) -> None:
    """Two `stickyd serve` on one PostgreSQL behind one address (docs/operating.md): a group started on
    one replica is listed by the other, which hands out the next generation once the first is gone;
    the Python client given both URLs moves on to the live one."""
    backend, survivor = group_services.get(store)
    group = f"failover-{store}"
    with running_service(backend.env) as doomed, httpx.Client(base_url=doomed.url, timeout=30) as http:
        first = ok(rebalance(http, group, -1, PROBLEM))
        doomed_url = doomed.url
    with StickydClient(f"{doomed_url},{survivor.url}", timeout=30, retries=1) as client:
        listed = {entry.group_id for entry in client.groups().groups}
        assert group in listed
        moved_on = client.rebalance_group(group, first["generation"], PROBLEM)
    assert moved_on.generation == first["generation"] + 1
    assert moved_on.solution.model_dump(mode="json")["assignment"] == first["solution"]["assignment"], (
        "nobody moves when nothing changed"
    )
