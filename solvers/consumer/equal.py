"""Equal subscriptions: the optimum by construction in O(P log P), no model needed.

Every member gets floor(P/M) or ceil(P/M) partitions (balance). A member keeps
min(owned, quota) of what it owns, so the P mod M larger quotas go first to members that own
at least ceil(P/M): that maximises kept partitions, hence minimises moves (stickiness).
Ties go to the member that sorts first by id (deterministic).
"""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex


def solve_equal(index: ConsumerIndex) -> list[np.ndarray]:
    n = index.member_count
    sizes = [g.units for g in index.groups]
    claims = np.concatenate([g.claims[0] for g in index.groups]) if sizes else np.zeros(0, np.int64)
    total = len(claims)
    own = np.bincount(claims + 1, minlength=n + 1)[1:]  # unowned partitions (-1) counted apart, cut off
    base, extra = divmod(total, n)
    # the larger quotas go to members that can fill them with what they already own
    rank = np.lexsort((np.arange(n), -(own >= base + 1).astype(np.int64)))
    quota = np.full(n, base, dtype=np.int64)
    quota[rank[:extra]] += 1

    keep = np.minimum(own, quota)
    owners = claims.astype(np.int64, copy=False)  # the concatenation's own array, changed in place
    # a member over its quota keeps its lowest-numbered partitions: it gives up its highest-numbered
    owners[_given_up(claims, own - keep, n)] = -1
    # released and unowned partitions fill the members still below quota, in id order
    free = np.flatnonzero(owners < 0)
    owners[free] = np.repeat(np.arange(n), quota - keep)
    return list(np.split(owners, np.cumsum(sizes)[:-1])) if sizes else []


FIRST_CHUNK = 4096
"""partitions looked at first, from the end, for those that members over their quota give up;
each further look takes twice as many (a join: each member gives one or two, near the end)."""


def _given_up(claims: np.ndarray, excess: np.ndarray, n: int) -> np.ndarray:
    """The positions of the `excess[m]` highest-numbered partitions each member m claims, found
    from the end in chunks that double (none when no member is over its quota)."""
    need = excess.astype(np.int64)
    found: list[np.ndarray] = []
    end, size = len(claims), FIRST_CHUNK
    while end > 0 and need.any():
        start = max(0, end - size)
        backwards = claims[start:end][::-1]
        # a claimant that still gives partitions up, its partitions from the highest-numbered down
        at = np.flatnonzero((backwards >= 0) & (need[backwards] > 0))  # (need[-1] read, then dropped)
        members = backwards[at]
        # each one's rank among its member's, the highest-numbered first (a 16-bit key sorts in
        # linear time: numpy's radix sort for stable sorts of small ints)
        by_member = np.argsort(members.astype(np.uint16) if n <= np.iinfo(np.uint16).max else members, kind="stable")
        count = np.bincount(members, minlength=n)
        rank = np.empty(len(at), dtype=np.int64)
        rank[by_member] = np.arange(len(at)) - np.repeat(np.cumsum(count) - count, count)
        taken = at[rank < need[members]]
        found.append(end - 1 - taken)
        need -= np.bincount(backwards[taken], minlength=n)
        end, size = start, 2 * size
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
