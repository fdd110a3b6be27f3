"""A valid Streams target in a few vectorised passes, for when even the sticky heuristic would be
late (the Streams counterpart of solvers/consumer/quick_fill.py).

1. each client's quota is its capacity-weighted share of all tasks (the floor, one more for the
   clients that owned the most, until the quotas sum to the tasks);
2. each task stays with its previous active client while that client is under its quota, in task
   order; the other tasks are dealt round robin to the clients short of their quota;
3. the k-th standby of a stateful task goes to the (k+1)-th client after its active, in client
   order: distinct clients, never the active's, as balanced as the actives.

Valid by construction (one active per task on a real client; `replicas` <= clients - 1 standbys
on distinct clients other than the active); not as sticky as the heuristic for standbys, nor
balanced per subtopology. Linear in the tasks after one sort.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.streams.flow import StreamsTarget


def solve_quick_streams(index: StreamsIndex) -> StreamsTarget:
    n, n_tasks = index.client_count, index.task_count
    quota = _quota(index, n)
    active = _kept_actives(index.prev_active, quota, n)
    kept = np.bincount(active[active >= 0], minlength=n)
    free = np.flatnonzero(active < 0)
    slots = _round_robin(quota - kept)  # exactly the free tasks: the quotas sum to the tasks
    if len(slots) < len(free):  # cannot happen; stay valid anyway
        slots = np.concatenate([slots, np.arange(len(free) - len(slots)) % n])
    active[free] = slots[: len(free)]
    standby = np.full((n_tasks, index.replicas), -1, dtype=np.int64)
    stateful = np.flatnonzero(index.stateful)
    for k in range(index.replicas):
        standby[stateful, k] = (active[stateful] + 1 + k) % n
    standby.sort(axis=1)
    return StreamsTarget(active=active, standby=standby)


def _quota(index: StreamsIndex, n: int) -> np.ndarray:
    """Each client's active count: the floor of its share, plus one for the clients that owned the
    most (as many as the floors leave tasks over, among clients whose ceil is above their floor)."""
    lo, hi = index.active_bounds()
    owned = np.bincount(index.prev_active[index.prev_active >= 0], minlength=n)
    spare = index.task_count - int(lo.sum())
    can = np.flatnonzero(hi > lo)
    extra = can[np.lexsort((can, -owned[can]))][:spare]
    quota = lo.astype(np.int64).copy()
    quota[extra] += 1
    return quota


def _kept_actives(prev_active: np.ndarray, cap: np.ndarray, n: int) -> np.ndarray:
    """prev_active where the owner's first `cap[owner]` tasks (in task order) are, else -1."""
    active = np.full(len(prev_active), -1, dtype=np.int64)
    owned = np.flatnonzero((prev_active >= 0) & (prev_active < n))
    if not len(owned):
        return active
    owners = prev_active[owned]
    order = np.argsort(owners, kind="stable")
    sorted_owners = owners[order]
    starts = np.searchsorted(sorted_owners, sorted_owners, side="left")
    rank = np.empty(len(owned), dtype=np.int64)
    rank[order] = np.arange(len(owned)) - starts
    keep = rank < cap[owners]
    active[owned[keep]] = owners[keep]
    return active


def _round_robin(counts: np.ndarray) -> np.ndarray:
    """Client ids, `counts[j]` of client j, ordered slot 0 of every client, then slot 1, ..."""
    counts = np.asarray(counts, dtype=np.int64)
    clients = np.repeat(np.arange(len(counts)), counts)
    if not len(clients):
        return clients
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(clients)) - np.repeat(starts, counts)
    return clients[np.lexsort((clients, rank))]
