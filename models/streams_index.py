"""Index a Streams problem once: clients and tasks by integer id, claims and lags resolved,
and the capacity-weighted balance bounds every solver and the validator share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.streams import StreamsProblem, parse_task


def subtopology_key(sub_id: str) -> tuple[int, int | str]:
    """Numeric subtopology ids sort as numbers, before any other names."""
    return (0, int(sub_id)) if sub_id.isdigit() else (1, sub_id)


@dataclass(frozen=True)
class StreamsIndex:
    clients: tuple[str, ...]
    """client ids, sorted: index j is the client's integer id everywhere."""
    capacity: np.ndarray
    subtopologies: tuple[str, ...]
    """subtopology ids, sorted numerically where they are numbers."""
    task_sub: np.ndarray
    """per task: its subtopology index; tasks are ordered by subtopology, then partition."""
    task_partition: np.ndarray
    stateful: np.ndarray
    """per task: bool."""
    prev_active: np.ndarray
    """per task: the client that ran it as active (-1: nobody, or claimed twice)."""
    prev_standby: tuple[frozenset[int], ...]
    """per task: clients that held a standby of it (not its previous active)."""
    caught_up: tuple[frozenset[int], ...]
    """per stateful task: clients whose lag is within acceptable_recovery_lag."""
    replicas: int
    """standbys per stateful task: num_standby_replicas, fewer when clients are too few."""
    racks: tuple[str | None, ...]
    warnings: tuple[str, ...]

    @property
    def task_count(self) -> int:
        return len(self.task_sub)

    @property
    def client_count(self) -> int:
        return len(self.clients)

    def task_name(self, t: int) -> str:
        return f"{self.subtopologies[int(self.task_sub[t])]}_{int(self.task_partition[t])}"

    def shares(self, total: int) -> tuple[np.ndarray, np.ndarray]:
        """floor and ceil of each client's capacity-weighted share of `total`."""
        cap_total = int(self.capacity.sum())
        exact = total * self.capacity
        return exact // cap_total, -((-exact) // cap_total)

    def previous_standby_counts(self) -> np.ndarray:
        """per client: previous standby replicas it holds (of stateful tasks, not beside their active)."""
        counts = np.zeros(self.client_count, dtype=np.int64)
        for t in np.flatnonzero(self.stateful).tolist():
            for j in self.prev_standby[t]:
                counts[j] += 1
        return counts

    def active_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(self.task_count)

    def stateful_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(int(self.stateful.sum()) * (1 + self.replicas))

    def subtopology_bounds(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(int((self.task_sub == s).sum()))


def index_streams_problem(problem: StreamsProblem) -> StreamsIndex:
    clients = sorted(problem.clients, key=lambda c: c.id)
    subs = sorted(problem.subtopologies, key=lambda s: subtopology_key(s.id))
    none = [np.zeros(0, np.int64)]
    task_sub = np.concatenate([np.full(s.partitions, i, dtype=np.int64) for i, s in enumerate(subs)] or none)
    task_partition = np.concatenate([np.arange(s.partitions, dtype=np.int64) for s in subs] or none)
    stateful = np.concatenate([np.full(s.partitions, s.stateful) for s in subs] or none).astype(bool)
    first = np.concatenate([[0], np.cumsum([s.partitions for s in subs])]).astype(np.int64)
    sub_pos = {s.id: i for i, s in enumerate(subs)}

    stale: set[str] = set()

    def task_of(name: str) -> int | None:
        sub, partition = parse_task(name) or ("", -1)
        s = sub_pos.get(sub)
        if s is None or partition >= subs[s].partitions:
            stale.add(name)
            return None
        return int(first[s] + partition)

    n_tasks = len(task_sub)
    prev_active = np.full(n_tasks, -1, dtype=np.int64)
    claimed_twice = np.zeros(n_tasks, dtype=bool)
    standby: list[set[int]] = [set() for _ in range(n_tasks)]
    lags: list[dict[int, int]] = [{} for _ in range(n_tasks)]
    for j, client in enumerate(clients):
        for name in client.active:
            t = task_of(name)
            if t is None:
                continue
            if prev_active[t] >= 0 and prev_active[t] != j:
                claimed_twice[t] = True
            prev_active[t] = j
        for name in client.standby:
            t = task_of(name)
            if t is not None:
                standby[t].add(j)
        for name, lag in client.lags.items():
            t = task_of(name)
            if t is not None:
                lags[t][j] = lag
    prev_active[claimed_twice] = -1

    acceptable = problem.config.acceptable_recovery_lag
    caught_up = []
    for t in range(n_tasks):
        owner = int(prev_active[t])
        # the previous active owner counts as lag 0 unless its lags say otherwise
        lag_of = dict(lags[t])
        if owner >= 0:
            lag_of.setdefault(owner, 0)
        caught_up.append(frozenset(j for j, value in lag_of.items() if value <= acceptable))
        standby[t].discard(owner)

    warnings = []
    if stale:
        warnings.append(f"{len(stale)} claims on tasks that no longer exist ignored: {', '.join(sorted(stale)[:5])}")
    if claimed_twice.any():
        warnings.append(f"{int(claimed_twice.sum())} tasks claimed active by two clients count as owned by neither")
    replicas = min(problem.config.num_standby_replicas, len(clients) - 1)
    if replicas < problem.config.num_standby_replicas and stateful.any():
        warnings.append(f"only {replicas} standby replicas per task: there are {len(clients)} clients")
    return StreamsIndex(
        clients=tuple(c.id for c in clients),
        capacity=np.array([c.capacity for c in clients], dtype=np.int64),
        subtopologies=tuple(s.id for s in subs),
        task_sub=task_sub,
        task_partition=task_partition,
        stateful=stateful,
        prev_active=prev_active,
        prev_standby=tuple(frozenset(s) for s in standby),
        caught_up=tuple(caught_up),
        replicas=replicas,
        racks=tuple(c.rack for c in clients),
        warnings=tuple(warnings),
    )
