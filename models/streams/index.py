"""Index a Streams problem once: clients and tasks by integer id, claims and lags resolved,
and the capacity-weighted balance bounds every solver and the validator share."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat

import numpy as np

from stickyd.models.streams.claims import resolve_task_names
from stickyd.models.streams.problem import StreamsProblem


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
    standby_pairs: np.ndarray
    """shape (k, 2), sorted: (task, client) for each client that held a standby of the task (not
    its previous active), once."""
    caught_up_pairs: np.ndarray
    """shape (k, 2), sorted: (task, client) for each client whose lag on the task is within
    acceptable_recovery_lag (the previous active owner counts as lag 0 unless its lags say
    otherwise)."""
    names: tuple[str, ...]
    """per task: its name, as Kafka writes it (`<subtopology>_<partition>`)."""
    replicas: int
    """standbys per stateful task: num_standby_replicas, fewer when clients are too few."""
    racks: tuple[str | None, ...]
    warnings: tuple[str, ...]
    move_cost: np.ndarray
    """per task: what its move weighs at the stickiness levels: its `task_costs` entry (1 without
    one) with `stickiness: restore_cost`, else 1 (moves are counted)."""
    lag_pairs: np.ndarray
    """shape (k, 3), sorted: (task, client, lag) for each lag a client reports on a task that
    exists (a client holds state of that task: in Kafka, a state directory on its disk)."""
    weighted: bool = False
    """`stickiness: restore_cost`: the stickiness levels sum `move_cost` instead of counting."""

    @property
    def task_count(self) -> int:
        return len(self.task_sub)

    @property
    def client_count(self) -> int:
        return len(self.clients)

    @cached_property
    def prev_standby(self) -> tuple[frozenset[int], ...]:
        """per task: clients that held a standby of it (not its previous active); built on first use
        (the quick fill and the answer use the pairs)."""
        return _sets_per_task(self.standby_pairs, self.task_count, ())

    @cached_property
    def caught_up(self) -> tuple[frozenset[int], ...]:
        """per task: clients whose lag is within acceptable_recovery_lag; built on first use."""
        owner_alone = tuple(frozenset((j,)) for j in range(self.client_count))
        return _sets_per_task(self.caught_up_pairs, self.task_count, owner_alone)

    def is_caught_up(self, tasks: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """per (tasks[i], clients[i]): whether that client is caught up on that task."""
        pairs = self.caught_up_pairs
        return _contains(pairs[:, 0] * self.client_count + pairs[:, 1], tasks * self.client_count + clients)

    def held_standby(self, tasks: np.ndarray, clients: np.ndarray) -> np.ndarray:
        """per (task, client) of the broadcast `tasks` and `clients`: whether that client held a
        standby of that task before."""
        pairs = self.standby_pairs
        return _contains(pairs[:, 0] * self.client_count + pairs[:, 1], tasks * self.client_count + clients)

    @cached_property
    def rack_numbers(self) -> np.ndarray:
        """per client: its rack as a number, -1 for none; one more entry, -1, read for client -1
        (no client)."""
        numbers: dict[str, int] = {}
        ranked = [numbers.setdefault(rack, len(numbers)) if rack else -1 for rack in self.racks]
        return np.array([*ranked, -1], dtype=np.int64)

    def same_rack(self, clients: np.ndarray | int, others: np.ndarray) -> np.ndarray:
        """per pair of the broadcast `clients` and `others`: whether both are on one rack (KIP-925);
        a client without a rack, or -1 for no client, shares none."""
        a, b = self.rack_numbers[clients], self.rack_numbers[others]
        return (a == b) & (a >= 0)

    def caught_up_clients(self, tasks: np.ndarray) -> list[list[int]]:
        """per task in `tasks`: the clients caught up on it, in client order."""
        pairs = self.caught_up_pairs
        starts = np.searchsorted(pairs[:, 0], tasks, side="left").tolist()
        ends = np.searchsorted(pairs[:, 0], tasks, side="right").tolist()
        clients = pairs[:, 1].tolist()
        return [clients[a:b] for a, b in zip(starts, ends, strict=True)]

    def cost_of(self, tasks: np.ndarray) -> int:
        """The summed move costs of `tasks` (a mask or ids), exactly (restore costs up to 10^15
        each may pass int64 when summed)."""
        chosen = self.move_cost[tasks]
        return sum(chosen.tolist()) if self.weighted else len(chosen)

    def task_name(self, t: int) -> str:
        return self.names[t]

    def shares(self, total: int) -> tuple[np.ndarray, np.ndarray]:
        """floor and ceil of each client's capacity-weighted share of `total`."""
        cap_total = int(self.capacity.sum())
        exact = total * self.capacity
        return exact // cap_total, -((-exact) // cap_total)

    def previous_standby_counts(self) -> np.ndarray:
        """per client: previous standby replicas it holds (of stateful tasks, not beside their active)."""
        pairs = self.standby_pairs
        held = pairs[self.stateful[pairs[:, 0]], 1]
        return np.bincount(held, minlength=self.client_count).astype(np.int64)

    def active_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(self.task_count)

    def stateful_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(int(self.stateful.sum()) * (1 + self.replicas))

    def subtopology_bounds(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        return self.shares(int((self.task_sub == s).sum()))

    def all_subtopology_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """floor and ceil of every client's share of every subtopology, shape (subtopologies, clients)."""
        counts = np.bincount(self.task_sub, minlength=len(self.subtopologies)).astype(np.int64)
        cap_total = int(self.capacity.sum())
        exact = counts[:, None] * self.capacity[None, :]
        return exact // cap_total, -((-exact) // cap_total)


def _sets_per_task(pairs: np.ndarray, n_tasks: int, alone: tuple[frozenset[int], ...]) -> tuple[frozenset[int], ...]:
    """per task, the clients paired with it (a set of one client shared from `alone` when given)."""
    nobody: frozenset[int] = frozenset()
    sets = [nobody] * n_tasks
    if not len(pairs):
        return tuple(sets)
    tasks, clients = pairs[:, 0], pairs[:, 1]
    starts = np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1]])
    ends = np.r_[starts[1:], len(tasks)]
    client_list = clients.tolist()
    for t, a, b in zip(tasks[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
        sets[t] = alone[client_list[a]] if alone and b == a + 1 else frozenset(client_list[a:b])
    return tuple(sets)


def index_streams_problem(problem: StreamsProblem) -> StreamsIndex:
    clients = sorted(problem.clients, key=lambda c: c.id)
    subs = sorted(problem.subtopologies, key=lambda s: subtopology_key(s.id))
    none = [np.zeros(0, np.int64)]
    task_sub = np.concatenate([np.full(s.partitions, i, dtype=np.int64) for i, s in enumerate(subs)] or none)
    task_partition = np.concatenate([np.arange(s.partitions, dtype=np.int64) for s in subs] or none)
    stateful = np.concatenate([np.full(s.partitions, s.stateful) for s in subs] or none).astype(bool)
    n_tasks, n = len(task_sub), len(clients)
    # every task's name, as Kafka writes it: a claim is a dictionary look-up, not a parse (the
    # model has checked each name's shape; one not here names a task that no longer exists)
    digits = list(map(str, range(max((s.partitions for s in subs), default=0))))
    names: list[str] = []
    for sub in subs:
        names += map(f"{sub.id}_".__add__, digits[: sub.partitions])
    partitions = np.array([s.partitions for s in subs], dtype=np.int64)
    tasks = _TaskNames(names, tuple(s.id for s in subs), np.cumsum(partitions) - partitions, partitions)
    stale: set[str] = set()
    active_t, active_j = _claims(tasks, [c.active for c in clients], stale)
    standby_t, standby_j = _claims(tasks, [c.standby for c in clients], stale)
    lag_t, lag_j = _claims(tasks, [c.lags.keys() for c in clients], stale)
    lag_value = _values([c.lags.values() for c in clients], [len(c.lags) for c in clients])[lag_t >= 0]
    lag_t, lag_j = lag_t[lag_t >= 0], lag_j[lag_t >= 0]

    # a task claimed active by two clients counts as owned by neither
    claims = _unique(active_t[active_t >= 0] * n + active_j[active_t >= 0])
    claimed_t = claims // n
    twice = _unique(claimed_t[1:][claimed_t[1:] == claimed_t[:-1]])
    prev_active = np.full(n_tasks, -1, dtype=np.int64)
    prev_active[claimed_t] = claims % n
    prev_active[twice] = -1

    held = _unique(standby_t[standby_t >= 0] * n + standby_j[standby_t >= 0])
    held = held[prev_active[held // n] != held % n]
    # the previous active owner counts as lag 0 unless its lags say otherwise
    lag_keys = lag_t * n + lag_j
    owned = np.flatnonzero(prev_active >= 0)
    owner_keys = owned * n + prev_active[owned]
    within = lag_keys[lag_value <= problem.config.acceptable_recovery_lag]
    caught = _unique(np.concatenate([within, owner_keys[~_contains(_unique(lag_keys), owner_keys)]]))
    by_key = np.argsort(lag_keys, kind="stable")

    warnings = []
    if stale:
        warnings.append(f"{len(stale)} claims on tasks that no longer exist ignored: {', '.join(sorted(stale)[:5])}")
    if len(twice):
        warnings.append(f"{len(twice)} tasks claimed active by two clients count as owned by neither")
    move_cost, cost_warnings = _move_costs(problem, tasks, n_tasks)
    warnings += cost_warnings
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
        standby_pairs=np.stack([held // n, held % n], axis=1),
        caught_up_pairs=np.stack([caught // n, caught % n], axis=1),
        names=tuple(names),
        replicas=replicas,
        racks=tuple(c.rack for c in clients),
        warnings=tuple(warnings),
        move_cost=move_cost,
        lag_pairs=np.stack([lag_t[by_key], lag_j[by_key], lag_value[by_key]], axis=1),
        weighted=problem.options.stickiness == "restore_cost",
    )


def _move_costs(problem: StreamsProblem, tasks: _TaskNames, n_tasks: int) -> tuple[np.ndarray, list[str]]:
    """per task, what its move weighs (1 unless `stickiness: restore_cost` and `task_costs` say
    otherwise), and what the caller should hear about `task_costs`."""
    move_cost = np.ones(n_tasks, dtype=np.int64)
    if not problem.task_costs:
        return move_cost, []
    names = list(problem.task_costs)
    found = tasks.resolve([names], len(names))
    warnings = []
    unknown = [name for name, t in zip(names, found.tolist(), strict=True) if t < 0]
    if unknown:
        warnings.append(
            f"{len(unknown)} task_costs on tasks that do not exist ignored: {', '.join(sorted(unknown)[:5])}"
        )
    if problem.options.stickiness != "restore_cost":
        warnings.append("task_costs ignored: options.stickiness is tasks (moves are counted, not weighed)")
        return move_cost, warnings
    known = found >= 0
    move_cost[found[known]] = np.fromiter(problem.task_costs.values(), dtype=np.int64, count=len(names))[known]
    return move_cost, warnings


@dataclass
class _TaskNames:
    """Every task's name and where each subtopology's tasks start: claims resolved in bulk
    (models/streams/claims.py), else by a dictionary of the names, built on first need."""

    names: list[str]
    sub_ids: tuple[str, ...]
    sub_first_task: np.ndarray
    sub_partitions: np.ndarray
    _ids: dict[str, int] | None = None

    def resolve(self, per_client: list[Collection[str]], count: int) -> np.ndarray:
        """per claimed name (client by client): its task id, -1 for a name of no task."""
        if self._ids is None:
            claimed = chain.from_iterable(per_client)
            found = resolve_task_names(claimed, count, self.sub_ids, self.sub_first_task, self.sub_partitions)
            if found is not None:
                return found
            self._ids = dict(zip(self.names, range(len(self.names)), strict=True))
        lookups = map(self._ids.get, chain.from_iterable(per_client), repeat(-1))
        return np.fromiter(lookups, dtype=np.int64, count=count)


def _claims(tasks: _TaskNames, per_client: list[Collection[str]], stale: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """(task, client) per claimed name, in client order (task -1 for a name of no task; those
    names go to `stale`)."""
    sizes = [len(names) for names in per_client]
    total = sum(sizes)
    found = tasks.resolve(per_client, total)
    clients = np.repeat(np.arange(len(per_client), dtype=np.int64), sizes)
    if (found < 0).any():
        unknown = set(np.flatnonzero(found < 0).tolist())
        stale.update(name for i, name in enumerate(chain.from_iterable(per_client)) if i in unknown)
    return found, clients


def _unique(keys: np.ndarray) -> np.ndarray:
    """sorted distinct values (by sorting: numpy's hashing unique is far slower on these keys)."""
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """per key (of any shape): whether it is in `sorted_keys`."""
    if not len(sorted_keys):
        return np.zeros(np.shape(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def _values(per_client: list[Collection[int]], sizes: list[int]) -> np.ndarray:
    return np.fromiter(chain.from_iterable(per_client), dtype=np.int64, count=sum(sizes))
