"""StickydStreamsGroupAssignor, the broker-side streams task assignor (KIP-1071 groups, KIP-1357
interface), driven directly in a JVM through the public interfaces (`GroupAssignorDriver`) against
a real `stickyd serve`: the exact mapping on a hand-made group. The same class inside a real
broker is tested in tests/kafka/streams/test_streams_group_broker.py."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from typing import Any

import httpx

from stickyd.cli.child_service import ServiceProcess, free_port
from tests.kafka.jvm import APP_CLASSPATH

DRIVER = "io.stickyd.kafka.streams.app.GroupAssignorDriver"
SUBTOPOLOGIES = [{"id": "0", "partitions": 6, "stateful": False}, {"id": "1", "partitions": 6, "stateful": True}]
TASKS = {f"{s['id']}_{p}" for s in SUBTOPOLOGIES for p in range(6)}

# Two processes of two stream threads (members) ran everything; a third process with two members
# joins. p2 has caught up on 1_4 (its standby) and 1_0.
GROUP: dict[str, Any] = {
    "subtopologies": SUBTOPOLOGIES,
    "configs": {"num.standby.replicas": "1"},
    "members": [
        {"id": "m1", "process": "p1", "active": {"0": [0, 1, 2], "1": [0, 1, 2]}, "standby": {"1": [3]}},
        {"id": "m2", "process": "p1", "active": {"0": [], "1": []}, "standby": {"1": [4, 5]}},
        {
            "id": "m3",
            "process": "p2",
            "active": {"0": [3, 4, 5], "1": [3]},
            "standby": {"1": [0, 1]},
            "offsets": {"1_0": 90, "1_4": 100},
            "end_offsets": {"1_0": 100, "1_4": 100},
        },
        {"id": "m4", "process": "p2", "active": {"1": [4, 5]}, "standby": {"1": [2]}},
        {"id": "m5", "process": "p3"},
        {"id": "m6", "process": "p3"},
    ],
}


def run_driver(group: dict[str, Any], url: str) -> dict[str, Any]:
    env = {**os.environ, "STICKYD_URL": url, "STICKYD_TIMEOUT_MS": "3000"}
    done = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", APP_CLASSPATH, DRIVER],
        input=json.dumps(group).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def by_process(result: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    process_of = {m["id"]: m["process"] for m in GROUP["members"]}
    out: dict[str, dict[str, set[str]]] = {}
    for member, parts in result["members"].items():
        mine = out.setdefault(process_of[member], {"active": set(), "standby": set()})
        mine["active"] |= set(parts["active"])
        mine["standby"] |= set(parts["standby"])
    return out


def assert_every_task_once(result: dict[str, Any]) -> None:
    """Every task active on exactly one member; every stateful task has one standby, on another
    process than its active."""
    actives = Counter(t for parts in result["members"].values() for t in parts["active"])
    assert set(actives) == TASKS and set(actives.values()) == {1}
    processes = by_process(result)
    for task in {t for t in TASKS if t.startswith("1_")}:
        holders = [p for p, parts in processes.items() if task in parts["standby"]]
        owner = next(p for p, parts in processes.items() if task in parts["active"])
        assert len(holders) == 1 and holders[0] != owner, (task, holders, owner)


def contract_request() -> dict[str, Any]:
    """The same group in the contract's words, built independently of the Java mapping: a task's
    end offset is the largest any member reports (else the furthest offset a member's state
    reached), each process lags by that end minus its own offset, and the end offsets are the
    stateful tasks' restore costs."""
    ends: dict[str, int] = {}
    for m in GROUP["members"]:
        for task, end in m.get("end_offsets", {}).items():
            ends[task] = max(end, ends.get(task, end))
    for m in GROUP["members"]:
        for task in m.get("offsets", {}):
            ends.setdefault(task, max(o.get("offsets", {}).get(task, 0) for o in GROUP["members"]))
    clients = []
    for process in ("p1", "p2", "p3"):
        members = [m for m in GROUP["members"] if m["process"] == process]
        active = sorted(f"{s}_{p}" for m in members for s, ps in m.get("active", {}).items() for p in ps)
        standby = sorted(f"{s}_{p}" for m in members for s, ps in m.get("standby", {}).items() for p in ps)
        lags = {task: ends[task] - offset for m in members for task, offset in m.get("offsets", {}).items()}
        clients.append({"id": process, "capacity": len(members), "active": active, "standby": standby, "lags": lags})
    return {
        "subtopologies": SUBTOPOLOGIES,
        "clients": clients,
        "config": {"num_standby_replicas": 1, "max_warmup_replicas": 0, "acceptable_recovery_lag": 0},
        "task_costs": {task: max(1, cost) for task, cost in ends.items() if task.startswith("1_")},
        "options": {"stickiness": "restore_cost"},
    }


def test_broker_side_assignor_runs_stickyds_target_per_process_and_deals_it_to_the_threads(
    service: ServiceProcess,
) -> None:
    """Each process runs exactly the target stickyd gives for the group in the contract's words
    (warm-ups are the coordinator's, KIP-1357); inside a process, threads keep the tasks they had
    and the rest are dealt evenly."""
    result = run_driver(GROUP, service.url)
    assert result["fallbacks"] == 0
    assert_every_task_once(result)
    target = httpx.post(f"{service.url}/v1/assign/streams", json=contract_request(), timeout=30).json()["target"]
    processes = by_process(result)
    for process, parts in target.items():
        assert processes[process]["active"] == set(parts["active"]), process
        assert processes[process]["standby"] == set(parts["standby"]), process
    for member, parts in result["members"].items():
        assert len(parts["active"]) == 2, (member, parts)  # 12 tasks, 6 threads
    had = {m["id"]: {f"{s}_{p}" for s, ps in m.get("active", {}).items() for p in ps} for m in GROUP["members"]}
    # m1 had six actives; p1 keeps four of them: m1 keeps two of its own
    assert len(had["m1"] & set(result["members"]["m1"]["active"])) == 2


def test_broker_side_assignor_falls_back_to_kafkas_sticky_when_stickyd_is_down() -> None:
    """Nothing listens at STICKYD_URL: Kafka's built-in sticky assignor answers, counted."""
    result = run_driver(GROUP, f"http://127.0.0.1:{free_port()}")
    assert result["fallbacks"] == 1
    assert_every_task_once(result)
