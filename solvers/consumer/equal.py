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
    own = np.bincount(claims[claims >= 0], minlength=n)
    base, extra = divmod(total, n)
    # the larger quotas go to members that can fill them with what they already own
    rank = np.lexsort((np.arange(n), -(own >= base + 1).astype(np.int64)))
    quota = np.full(n, base, dtype=np.int64)
    quota[rank[:extra]] += 1

    owners = np.full(total, -1, dtype=np.int64)
    claimed = np.flatnonzero(claims >= 0)
    by_member = claimed[np.argsort(claims[claimed], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(own)[:-1]])
    keep = np.minimum(own, quota)
    # each member keeps its lowest-numbered owned partitions, up to its quota
    position = np.arange(len(by_member)) - np.repeat(starts, own)
    kept = by_member[position < np.repeat(keep, own)]
    owners[kept] = claims[kept]
    # released and unowned partitions fill the members still below quota, in id order
    free = np.flatnonzero(owners < 0)
    owners[free] = np.repeat(np.arange(n), quota - keep)
    return list(np.split(owners, np.cumsum(sizes)[:-1])) if sizes else []
