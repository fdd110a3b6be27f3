"""Writes `tests/recorded_answers.json.gz`: seeded random consumer and Streams requests with the
service's answer to each (status and body, the solve time left out).

The recording pins the answers: `tests/test_recorded_answers.py` sends every request again and
compares the bytes. Write it anew only when an answer is meant to change:

    .venv/bin/python -m tests.record_answers
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path
from typing import Any

from stickyd.service.processes.solve_job import Limits, run_job

RECORDING = Path(__file__).with_name("recorded_answers.json.gz")
EXAMPLES = Path(__file__).parents[1] / "service" / "examples"
CONSUMER_REQUESTS = 150
STREAMS_REQUESTS = 100
TIME_LIMIT_MS = 30_000  # small requests: every answer is the solver's own, never a deadline's


def consumer_request(rng: random.Random) -> dict[str, Any]:
    """A small consumer-group request: subscriptions, claims, racks, joins and options at random."""
    topics = {f"t{i}": rng.randint(1, 9) for i in range(rng.randint(1, 4))}
    names = list(topics)
    racks = ["a", "b", "c"]
    members = []
    for m in range(rng.randint(1, 6)):
        subscribed = rng.sample(names, rng.randint(1, len(names)))
        member: dict[str, Any] = {"id": f"c{m}", "topics": subscribed}
        if rng.random() < 0.7:
            member["owned"] = {
                t: sorted(rng.sample(range(topics[t] + 1), rng.randint(0, topics[t])))
                for t in rng.sample(subscribed, rng.randint(0, len(subscribed)))
            }
            member["generation"] = rng.randint(1, 3)
        if rng.random() < 0.3:
            member["rack"] = rng.choice(racks)
        members.append(member)
    request: dict[str, Any] = {"topics": topics, "members": members}
    if len(names) >= 2 and rng.random() < 0.25:
        request["copartitioned"] = [rng.sample(names, 2)]
    if rng.random() < 0.2:
        chosen = rng.choice(names)
        request["partition_racks"] = {chosen: [rng.sample(racks, rng.randint(1, 2)) for _ in range(topics[chosen])]}
    options: dict[str, Any] = {
        "strategy": rng.choice(["optimal", "optimal", "optimal", "sticky", "range", "roundrobin"]),
        "protocol": rng.choice(["eager", "cooperative"]),
        "time_limit_ms": TIME_LIMIT_MS,
    }
    if rng.random() < 0.25:
        options["max_imbalance"] = rng.randint(0, 2)
    request["options"] = options
    return request


def streams_request(rng: random.Random) -> dict[str, Any]:
    """A small Streams request: subtopologies, capacities, previous actives, standbys and lags at random."""
    subtopologies = [
        {"id": str(s), "partitions": rng.randint(1, 6), "stateful": rng.random() < 0.7}
        for s in range(rng.randint(1, 3))
    ]
    tasks = [f"{s['id']}_{p}" for s in subtopologies for p in range(s["partitions"])]
    clients = []
    for c in range(rng.randint(1, 5)):
        client: dict[str, Any] = {"id": f"m{c}", "capacity": rng.randint(1, 3)}
        if rng.random() < 0.3:
            client["rack"] = rng.choice(["a", "b"])
        held = rng.sample(tasks, rng.randint(0, min(len(tasks), 4)))
        split = rng.randint(0, len(held))
        client["active"], client["standby"] = held[:split], held[split:]
        if held and rng.random() < 0.6:
            client["lags"] = {t: rng.choice([0, 50, 5_000, 50_000]) for t in held}
        clients.append(client)
    return {
        "subtopologies": subtopologies,
        "clients": clients,
        "config": {
            "num_standby_replicas": rng.randint(0, 2),
            "max_warmup_replicas": rng.randint(1, 3),
            "acceptable_recovery_lag": rng.choice([0, 100, 10_000]),
        },
        "options": {"strategy": rng.choice(["optimal", "optimal", "greedy", "sticky"]), "time_limit_ms": TIME_LIMIT_MS},
    }


def requests() -> list[tuple[str, dict[str, Any]]]:
    """The contract's examples, then the seeded random requests."""
    made: list[tuple[str, dict[str, Any]]] = [
        ("consumer" if path.name.startswith("consumer") else "streams", json.loads(path.read_text()))
        for path in sorted(EXAMPLES.glob("*.json"))
    ]
    rng = random.Random(20261125)
    made += [("consumer", consumer_request(rng)) for _ in range(CONSUMER_REQUESTS)]
    made += [("streams", streams_request(rng)) for _ in range(STREAMS_REQUESTS)]
    return made


TIME_MS = re.compile(rb'"time_ms":\s*[-0-9.e+]+')


def answer(kind: str, request: dict[str, Any]) -> tuple[int, str]:
    """The service's answer as a solver process makes it, its one measured figure masked:
    `stats.time_ms` reads 0; every other byte is as sent."""
    limits = Limits(max_partitions=1_000_000, max_members=10_000, default_time_limit_ms=2_000, max_time_limit_ms=60_000)
    result = run_job(kind, json.dumps(request).encode(), limits)  # type: ignore[arg-type]
    return result.status, TIME_MS.sub(b'"time_ms":0', result.body).decode()


def main() -> None:
    rows = []
    for kind, request in requests():
        status, body = answer(kind, request)
        rows.append({"kind": kind, "request": request, "status": status, "answer": body})
    with gzip.open(RECORDING, "wt", encoding="utf-8") as out:
        json.dump(rows, out, sort_keys=True)
    print(f"{RECORDING}: {len(rows)} requests")


if __name__ == "__main__":
    main()
