"""Group state benchmark: rebalance calls per second for one group and for 1,000 groups, on SQLite
and on PostgreSQL, and the latency a stored rebalance adds over the stateless call of the same
problem (100 partitions x 10 members, 10,000 x 1,000), in one run.

    python -m bench.groups            # full
    python -m bench.groups --quick    # fewer calls

PostgreSQL is a private server started for the run (Debian's package, as the tests do).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from bench.layouts import kafka_like_problem
from bench.results import write_section
from stickyd.cli.child_service import running_service
from tests.store.postgres_cluster import postgres_cluster

SIZES = [(100, 10), (10_000, 1_000)]
SMALL = {"topics": {"orders": 100}, "members": [{"id": f"m{i}", "topics": ["orders"]} for i in range(10)]}


@contextmanager
def stores() -> Iterator[list[tuple[str, dict[str, str]]]]:
    with tempfile.TemporaryDirectory(prefix="stickyd-bench-") as data, postgres_cluster() as postgres:
        yield [
            ("SQLite", {"STICKYD_DATA_DIR": data}),
            ("PostgreSQL", {"STICKYD_DATA_DIR": data, "STICKYD_DATABASE_URL": postgres.create_database("bench")}),
        ]


def without_claims(problem: dict[str, Any]) -> dict[str, Any]:
    """The problem with `owned`/`generation` left out: the service fills in what it stored."""
    stripped = copy.deepcopy(problem)
    for member in stripped["members"]:
        member.pop("owned", None)
        member.pop("generation", None)
    return stripped


def with_claims(problem: dict[str, Any], assignment: dict[str, Any], generation: int) -> dict[str, Any]:
    """The same problem as a stateless caller sends it: every member's `owned` from the last answer."""
    claimed = without_claims(problem)
    for member in claimed["members"]:
        if assignment.get(member["id"]):
            member |= {"owned": assignment[member["id"]], "generation": generation}
    return claimed


async def rebalance(http: httpx.AsyncClient, group: str, generation: int, problem: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(
        f"/v1/groups/{group}/rebalance", json={"kind": "consumer", "generation": generation, "problem": problem}
    )
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


async def one_group_rate(url: str, calls: int) -> float:
    """Calls/s of one caller rebalancing one group back to back (each call waits for the last)."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        generation = (await rebalance(http, "bench-one", -1, SMALL))["generation"]
        started = time.perf_counter()
        for _ in range(calls):
            generation = (await rebalance(http, "bench-one", generation, SMALL))["generation"]
        return calls / (time.perf_counter() - started)


async def many_groups_rate(url: str, groups: int, concurrency: int) -> float:
    """Calls/s over `groups` groups, two rebalances each (create, then the next generation)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for g in range(groups):
        queue.put_nowait(g)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:

        async def worker() -> None:
            while not queue.empty():
                g = queue.get_nowait()
                first = await rebalance(http, f"bench-many-{g}", -1, SMALL)
                await rebalance(http, f"bench-many-{g}", first["generation"], SMALL)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return 2 * groups / (time.perf_counter() - started)


async def added_latency(url: str, partitions: int, members: int, repeat: int) -> dict[str, float]:
    """p50/p95 of the stateless call and of the stored rebalance of the same problem, interleaved."""
    problem = kafka_like_problem(partitions, members, layout="sticky", event="leave")
    problem["options"] = {"time_limit_ms": 10_000}
    group = f"bench-latency-{partitions}x{members}"
    stateless: list[float] = []
    stored: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        answer = await rebalance(http, group, -1, problem)  # seeds the group from the layout's claims
        bare = without_claims(problem)
        for _ in range(repeat):
            claimed = with_claims(problem, answer["solution"]["assignment"], answer["generation"])
            started = time.perf_counter()
            (await http.post("/v1/assign/consumer", json=claimed)).raise_for_status()
            stateless.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            answer = await rebalance(http, group, answer["generation"], bare)
            stored.append((time.perf_counter() - started) * 1000)

    def p95(values: list[float]) -> float:
        return sorted(values)[max(0, round(0.95 * len(values)) - 1)]

    return {
        "stateless_p50": statistics.median(stateless),
        "stored_p50": statistics.median(stored),
        "stateless_p95": p95(stateless),
        "stored_p95": p95(stored),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls, groups, repeat = (100, 200, 5) if args.quick else (500, 1000, 15)
    rates: list[str] = []
    latencies: list[str] = []
    with stores() as backends:
        for name, env in backends:
            with running_service({**env, "STICKYD_WORKERS": "2"}) as service:
                one = asyncio.run(one_group_rate(service.url, calls))
                many = asyncio.run(many_groups_rate(service.url, groups, 8))
                rates.append(f"| {name} | {one:.0f} | {many:.0f} |")
                print(rates[-1], flush=True)
                for partitions, members in SIZES:
                    got = asyncio.run(added_latency(service.url, partitions, members, repeat))
                    latencies.append(
                        f"| {name} | {partitions:,} x {members:,} | {got['stateless_p50']:.1f} "
                        f"| {got['stored_p50']:.1f} "
                        f"| {got['stored_p50'] - got['stateless_p50']:+.1f} | {got['stateless_p95']:.1f} "
                        f"| {got['stored_p95']:.1f} |"
                    )
                    print(latencies[-1], flush=True)
    body = f"""On a busy machine absolute figures are noisy; the two columns of each latency row are
taken interleaved in the same minutes and compare fairly.

`stickyd serve` (2 solver processes) on loopback with its group store in SQLite (a file in a
temporary data directory) or PostgreSQL 15 (a private local server, fsync off); one `httpx`
client process on the same machine. {"Quick run. " if args.quick else ""}A rebalance call
reads the group, solves in the pool and commits the next generation (group row, history row,
pruning) in one transaction.

| store | one group, 1 caller, back to back ({calls} calls): calls/s | {groups:,} groups, 8 callers: calls/s |
|---|---:|---:|
{chr(10).join(rates)}

Added latency of a stored rebalance (`POST /v1/groups/{{id}}/rebalance`, `owned` left out and
filled in from the store) over the stateless call of the same problem (`POST
/v1/assign/consumer`, `owned` sent from the last answer), {repeat} pairs each, previous
assignment as Kafka's sticky assignor leaves it after a member left (bench/layouts.py):

| store | partitions x members | stateless p50 ms | stored p50 ms | added p50 ms | stateless p95 ms | stored p95 ms |
|---|---|---:|---:|---:|---:|---:|
{chr(10).join(latencies)}
"""
    write_section("Group state (/v1/groups)", body)


if __name__ == "__main__":
    main()
