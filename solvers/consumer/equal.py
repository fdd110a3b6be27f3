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
    # after a leave, or partitions added, every member keeps all it owns: the claims as they are
    everyone_keeps = bool((own <= quota).all())
    owners = claims.astype(np.int64, copy=False) if everyone_keeps else _kept_up_to_quota(claims, own, keep, n)
    # released and unowned partitions fill the members still below quota, in id order
    free = np.flatnonzero(owners < 0)
    owners[free] = np.repeat(np.arange(n), quota - keep)
    return list(np.split(owners, np.cumsum(sizes)[:-1])) if sizes else []


def _kept_up_to_quota(claims: np.ndarray, own: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """Per partition, its claimant where the claimant keeps it, else -1: members owning no more
    than their quota keep everything, the others their lowest-numbered owned partitions."""
    owners = np.full(len(claims), -1, dtype=np.int64)
    claimed = np.flatnonzero(claims >= 0)
    whole = (own <= keep)[claims[claimed]]
    owners[claimed[whole]] = claims[claimed[whole]]
    over = claimed[~whole]
    members = claims[over]
    # a 16-bit key sorts in linear time (numpy's radix sort for stable sorts of small ints)
    key = members.astype(np.uint16) if n <= np.iinfo(np.uint16).max else members
    by_member = over[np.argsort(key, kind="stable")]
    count = np.bincount(members, minlength=n)
    starts = np.cumsum(count) - count
    position = np.arange(len(by_member)) - np.repeat(starts, count)
    kept = by_member[position < np.repeat(keep, count)]
    owners[kept] = claims[kept]
    return owners
