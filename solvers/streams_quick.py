"""A valid Streams target in a few vectorised passes, for when even the sticky heuristic would be
late (the Streams counterpart of solvers/consumer_quick.py).

1. each task stays with its previous active client while that client is under its
   capacity-weighted share of all tasks (ceil), in task order;
2. the other tasks are dealt round robin to the clients still short of their share (floor
   first, then ceil), so each client ends within its share;
3. the k-th standby of a stateful task goes to the (k+1)-th client after its active, in client
   order: distinct clients, never the active's, as balanced as the actives.

Valid by construction (one active per task on a real client; `replicas` <= clients - 1 standbys
on distinct clients other than the active); not as sticky as the heuristic for standbys, nor
balanced per subtopology. Linear in the tasks after one sort.
"""

from __future__ import annotations

import numpy as np

from models.streams_index import StreamsIndex
from solvers.streams_flow import StreamsTarget


def solve_quick_streams(index: StreamsIndex) -> StreamsTarget:
    n, n_tasks = index.client_count, index.task_count
    lo, hi = index.active_bounds()
    active = _kept_actives(index.prev_active, hi, n)
    kept = np.bincount(active[active >= 0], minlength=n)
    free = np.flatnonzero(active < 0)
    # slots: first up to each client's floor, then up to its ceil, round robin over the clients
    to_floor = np.clip(lo - kept, 0, None)
    to_ceil = hi - np.maximum(kept, lo)
    slots = np.concatenate([_round_robin(to_floor), _round_robin(to_ceil)])
    if len(slots) < len(free):  # cannot happen with shares that sum to the tasks; stay valid anyway
        slots = np.concatenate([slots, np.arange(len(free) - len(slots)) % n])
    active[free] = slots[: len(free)]
    standby = np.full((n_tasks, index.replicas), -1, dtype=np.int64)
    stateful = np.flatnonzero(index.stateful)
    for k in range(index.replicas):
        standby[stateful, k] = (active[stateful] + 1 + k) % n
    standby.sort(axis=1)
    return StreamsTarget(active=active, standby=standby)


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
