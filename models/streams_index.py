"""Index a Streams problem once: clients and tasks by integer id, claims and lags resolved,
and the capacity-weighted balance bounds every solver and the validator share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.streams import StreamsProblem


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
    # every task's name, as Kafka writes it: a claim is a dictionary look-up, not a parse (the
    # model has checked each name's shape; one not here names a task that no longer exists)
    task_ids = {f"{s.id}_{p}": t for t, (s, p) in enumerate((s, p) for s in subs for p in range(s.partitions))}

    stale: set[str] = set()
    get = task_ids.get
    n_tasks = len(task_sub)
    owner_of = [-1] * n_tasks
    claimed_twice: set[int] = set()
    standby: dict[int, set[int]] = {}
    lags: dict[int, dict[int, int]] = {}
    for j, client in enumerate(clients):
        for name in client.active:
            t = get(name)
            if t is None:
                stale.add(name)
                continue
            if owner_of[t] >= 0 and owner_of[t] != j:
                claimed_twice.add(t)
            owner_of[t] = j
        for name in client.standby:
            t = get(name)
            if t is None:
                stale.add(name)
            else:
                standby.setdefault(t, set()).add(j)
        for name, lag in client.lags.items():
            t = get(name)
            if t is None:
                stale.add(name)
            else:
                lags.setdefault(t, {})[j] = lag
    for t in claimed_twice:
        owner_of[t] = -1
    prev_active = np.array(owner_of, dtype=np.int64)

    acceptable = problem.config.acceptable_recovery_lag
    # the previous active owner counts as lag 0 unless its lags say otherwise (sets shared where equal)
    nobody: frozenset[int] = frozenset()
    owner_alone = [frozenset((j,)) for j in range(len(clients))]
    caught_up = [owner_alone[owner] if owner >= 0 else nobody for owner in owner_of]
    for t, lag_of in lags.items():
        owner = owner_of[t]
        merged = {owner: 0, **lag_of} if owner >= 0 else lag_of
        caught_up[t] = frozenset(j for j, value in merged.items() if value <= acceptable)
    prev_standby = [nobody] * n_tasks
    for t, held in standby.items():
        held.discard(owner_of[t])
        prev_standby[t] = frozenset(held)

    warnings = []
    if stale:
        warnings.append(f"{len(stale)} claims on tasks that no longer exist ignored: {', '.join(sorted(stale)[:5])}")
    if claimed_twice:
        warnings.append(f"{len(claimed_twice)} tasks claimed active by two clients count as owned by neither")
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
        prev_standby=tuple(prev_standby),
        caught_up=tuple(caught_up),
        replicas=replicas,
        racks=tuple(c.rack for c in clients),
        warnings=tuple(warnings),
    )
