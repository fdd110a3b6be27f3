"""The requests bench/limits.py sends: one body per size class (consumer groups from
bench/layouts.py, Streams applications as a sticky assignor leaves them), a time limit spliced in,
and the shared validators' verdict on an answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from bench.layouts import contract_json_bytes, kafka_like_problem
from stickyd.models import ConsumerProblem, ConsumerSolution, index_consumer_problem, validate_consumer_solution
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.models.streams.validation import validate_streams_solution

Kind = Literal["consumer", "streams"]
STREAMS_STATEFUL = 0.7
STREAMS_PARTITIONS_PER_SUBTOPOLOGY = 2_000


@dataclass(frozen=True)
class SizeClass:
    name: str
    kind: Kind
    units: int
    """partitions (consumer) or tasks (Streams)."""
    people: int
    """members (consumer) or clients (Streams)."""

    def problem(self) -> dict[str, Any]:
        if self.kind == "consumer":
            return kafka_like_problem(self.units, self.people, layout="sticky", shape="unequal", event="leave")
        return streams_problem(self.units, self.people)


SIZE_CLASSES = {
    "consumer-1k": SizeClass("consumer-1k", "consumer", 1_000, 100),
    "consumer-100k": SizeClass("consumer-100k", "consumer", 100_000, 1_000),
    "consumer-1M": SizeClass("consumer-1M", "consumer", 1_000_000, 2_000),
    "streams-10k": SizeClass("streams-10k", "streams", 10_000, 100),
    "streams-200k": SizeClass("streams-200k", "streams", 200_000, 1_000),
    "streams-500k": SizeClass("streams-500k", "streams", 500_000, 1_000),
    "consumer-tiny": SizeClass("consumer-tiny", "consumer", 200, 10),
    "streams-tiny": SizeClass("streams-tiny", "streams", 100, 5),
}
DEFAULT_CLASSES = ("consumer-1k", "consumer-100k", "consumer-1M", "streams-10k", "streams-200k")


def streams_problem(tasks: int, clients: int) -> dict[str, Any]:
    """`tasks` tasks over subtopologies of up to 2,000 partitions (70% of them stateful, one
    standby), after one of `clients + 1` clients left: actives dealt round robin, each stateful
    task's standby on the next client, caught up (lag 100)."""
    per_sub = min(tasks, STREAMS_PARTITIONS_PER_SUBTOPOLOGY)
    n_subs = max(1, tasks // per_sub)
    stateful_subs = round(n_subs * STREAMS_STATEFUL)
    subtopologies = [{"id": str(s), "partitions": per_sub, "stateful": s < stateful_subs} for s in range(n_subs)]
    before = clients + 1
    active: list[list[str]] = [[] for _ in range(before)]
    standby: list[list[str]] = [[] for _ in range(before)]
    t = 0
    for sub in subtopologies:
        for p in range(per_sub):
            name = f"{sub['id']}_{p}"
            active[t % before].append(name)
            if sub["stateful"]:
                standby[(t + 1) % before].append(name)
            t += 1
    left = before // 2
    out = [
        {"id": f"client-{j:05d}", "active": active[j], "standby": standby[j], "lags": dict.fromkeys(standby[j], 100)}
        for j in range(before)
        if j != left
    ]
    config = {"num_standby_replicas": 1, "max_warmup_replicas": 2, "acceptable_recovery_lag": 10_000}
    return {"subtopologies": subtopologies, "clients": out, "config": config}


def with_time_limit(problem: dict[str, Any], limit_ms: int) -> bytes:
    return contract_json_bytes({**problem, "options": {"time_limit_ms": limit_ms}})


class Validator:
    """The shared validators for answers to one problem (parsed and indexed once)."""

    def __init__(self, kind: Kind, problem: dict[str, Any]) -> None:
        self.kind = kind
        if kind == "consumer":
            self.consumer = ConsumerProblem.model_validate(problem)
            self.index = index_consumer_problem(self.consumer)
        else:
            self.streams = StreamsProblem.model_validate(problem)

    def violations(self, answer: bytes) -> list[str]:
        """What is wrong with an answer (empty: valid)."""
        data = json.loads(answer)
        if self.kind == "consumer":
            return validate_consumer_solution(self.consumer, ConsumerSolution.model_validate(data), self.index)
        return validate_streams_solution(self.streams, StreamsSolution.model_validate(data))
