"""The incremental candidate as counts (members x topics), its proof, the needless moves it still
makes cancelled, and the counts turned back into partitions.

The proof (stickyd.solvers.consumer.incremental_proof) reads the residual graph off the counts:
what each member holds of each topic against what it owned before. When Bellman-Ford finds a
negative cycle instead (the chains balanced the loads but moved more than needed, say), the
units go around it and the proof runs again, as cycle-cancelling min-cost-flow algorithms do;
each cancel lowers the cost, so this ends with a proof, or at MAX_CANCELS with none.

Counts become partitions the way solvers/consumer/classes.py `materialize` does: a member keeps
its lowest-numbered own partitions up to its count, the rest of a topic's partitions (ascending)
go to the members still short, in id order. Only topics whose partitions are not already dealt
that way are dealt again (the caller says which).
"""

from __future__ import annotations

import numpy as np

from stickyd.solvers.consumer.incremental_proof import negative_cycle, residual_costs

MAX_CANCELS = 200
"""rounds of cancelling negative cycles at most before the full flow is left to answer."""


def aggregate(owner: np.ndarray, pool: np.ndarray, members: int, pools: int) -> np.ndarray:
    """(members, pools): units of each pool held by each member (unplaced units left out)."""
    # unplaced units (owner -1) land in a first row, cut off: no mask, no copy of the placed ones
    counts = np.bincount((owner + 1) * pools + pool, minlength=(members + 1) * pools)
    return counts[pools:].reshape(members, pools)


def settle(
    counts: np.ndarray,
    claimed: np.ndarray,
    eligible: np.ndarray,
    give_up_at: float = float("inf"),
    tables: tuple[np.ndarray, np.ndarray] | None = None,
    potentials: tuple[np.ndarray, np.ndarray] | None = None,
) -> bool:
    """Cancel negative cycles in `counts` (in place) until none is left (True: proven optimal)
    or none can be found (False). `tables`: `residual_costs` at `counts`, and `potentials`: the
    members' and topics' distances the first proof starts from, when the caller has them."""
    n, pools = counts.shape
    # a simple cycle's moves part is at most its arcs: a balance weight above that comes first
    balance = n + pools + 2
    for _ in range(MAX_CANCELS + 1):
        # member -> topic: 0 when it holds a unit it did not own, +1 when only its own ones;
        # topic -> member: -1 when its own units of the topic are elsewhere, 0 for any reader
        hand_over, take = residual_costs(counts, claimed, eligible) if tables is None else tables
        loads = counts.sum(axis=1)
        found = negative_cycle(hand_over, take, loads, balance, give_up_at, potentials)
        tables = potentials = None
        if found is True or found is False:
            return found
        # cycles meeting only at the sink change disjoint counts and loads: all go round at once
        used: set[int] = set()
        cancelled = 0
        for cycle in found:
            inner = set(cycle) - {n + pools}
            if inner & used or _cost(cycle, hand_over, take, loads, balance) >= 0:
                continue
            used |= inner
            _cancel(cycle, counts)
            cancelled += 1
        if not cancelled:
            return False  # not the negative cycles they must be: prove nothing
    return False


def _cost(cycle: list[int], hand_over: np.ndarray, take: np.ndarray, loads: np.ndarray, balance: int) -> int:
    pools, n = hand_over.shape
    total = 0
    for tail, head in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        if tail < n and head == n + pools:
            total += balance * (2 * int(loads[tail]) + 1)
        elif tail == n + pools:
            total -= balance * (2 * int(loads[head]) - 1)
        elif tail < n:
            total += int(hand_over[head - n, tail])
        else:
            total += int(take[head, tail - n])
    return total


def _cancel(cycle: list[int], counts: np.ndarray) -> None:
    """One unit around the cycle: member -> topic hands one over, topic -> member takes one."""
    n = counts.shape[0]
    sink = n + counts.shape[1]
    for tail, head in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        if tail < n and n <= head < sink:
            counts[tail, head - n] -= 1
        elif n <= tail < sink and head < n:
            counts[head, tail - n] += 1


def realize(
    owner: np.ndarray, claimant: np.ndarray, offsets: np.ndarray, counts: np.ndarray, pools: np.ndarray
) -> None:
    """Deal `pools` again (in place) as `counts` says, each member keeping as many of its own
    partitions as it can."""
    for p in pools.tolist():
        _deal(owner[offsets[p] : offsets[p + 1]], claimant[offsets[p] : offsets[p + 1]], counts[:, p])


def _deal(owner: np.ndarray, claimant: np.ndarray, count: np.ndarray) -> None:
    """One topic's partitions: own ones first (lowest-numbered), then the rest in id order."""
    n = len(count)
    claimed = np.flatnonzero(claimant >= 0)
    by_member = claimed[np.argsort(claimant[claimed], kind="stable")]
    per_member = np.bincount(claimant[claimed], minlength=n)
    keep = np.minimum(count, per_member)
    position = np.arange(len(by_member)) - np.repeat(np.cumsum(per_member) - per_member, per_member)
    kept = by_member[position < np.repeat(keep, per_member)]
    owner[:] = -1
    owner[kept] = claimant[kept]
    owner[owner < 0] = np.repeat(np.arange(n), count - keep)
