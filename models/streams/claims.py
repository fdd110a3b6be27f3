"""Task names claimed by clients (`<subtopology>_<partition>`), resolved to task ids in bulk.

A 200k-task request names its tasks about half a million times (actives, standbys, lags); looking
each name up in a dictionary of every task's name costs ~0.3 us (a fresh string hashed, two
cache misses), 0.14 s in all. Here the names are joined into one ASCII buffer and split with
numpy instead: the partition's digits read column by column, the subtopology (up to
MAX_PACKED_ID bytes) packed into one integer and found among the subtopologies' by binary search.
Where a name does not fit that shape (non-ASCII, a longer subtopology id, anything the model
would not have accepted), `resolve_task_names` says so (None) and the caller looks names up one
by one: the two ways give the same ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

MAX_PACKED_ID = 7
"""subtopology ids up to this many bytes are packed into one int64 with their length."""
MAX_DIGITS = 10
"""int32 partitions have at most 10 digits."""
NEWLINE, UNDERSCORE, ZERO, NINE = 10, 95, 48, 57


def resolve_task_names(
    names: Iterable[str], count: int, sub_ids: Sequence[str], sub_first_task: np.ndarray, sub_partitions: np.ndarray
) -> np.ndarray | None:
    """Per name (`count` of them): its task id (`sub_first_task[s] + partition`), -1 for a name of
    no task (an unknown subtopology, a partition past its count); None where this bulk path
    cannot tell (the caller then looks the names up one by one)."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    if any(len(sub) > MAX_PACKED_ID or not sub.isascii() for sub in sub_ids):
        return None
    text = "\n".join(names) + "\n"
    if not text.isascii():
        return None
    raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    ends = np.flatnonzero(raw == NEWLINE)
    if len(ends) != count or (raw == 0).any():
        return None
    starts = np.r_[0, ends[:-1] + 1]
    underscores = np.flatnonzero(raw == UNDERSCORE)
    last = np.searchsorted(underscores, ends) - 1
    if (last < 0).any():
        return None
    sep = underscores[last]
    digits = ends - sep - 1
    id_length = sep - starts
    if (sep < starts).any() or (digits < 1).any() or (digits > MAX_DIGITS).any() or (id_length < 1).any():
        return None
    partition = _read_partitions(raw, sep, ends, digits)
    if partition is None:
        return None
    known = np.array([_packed(sub.encode("ascii")) for sub in sub_ids], dtype=np.int64)
    order = np.argsort(known, kind="stable")
    sub = np.full(count, -1, dtype=np.int64)
    short = id_length <= MAX_PACKED_ID
    if len(known):
        keys = _packed_ids(raw, starts[short], id_length[short])
        at = np.minimum(np.searchsorted(known[order], keys), len(known) - 1)
        found = known[order][at] == keys
        sub[np.flatnonzero(short)[found]] = order[at[found]]
    valid = sub >= 0
    valid[valid] = partition[valid] < sub_partitions[sub[valid]]
    return np.where(valid, sub_first_task[np.maximum(sub, 0)] + partition, -1)


def _read_partitions(raw: np.ndarray, sep: np.ndarray, ends: np.ndarray, digits: np.ndarray) -> np.ndarray | None:
    """The numbers between each name's last underscore and its end; None if one is not a plain
    decimal (a non-digit, or a leading zero: no task is named so)."""
    first = raw[sep + 1]
    if ((digits > 1) & (first == ZERO)).any():
        return None
    value = np.zeros(len(ends), dtype=np.int64)
    width = int(digits.max())
    for column in range(width):
        at = ends - width + column
        inside = at > sep
        char = raw[np.where(inside, at, 0)].astype(np.int64)
        if (inside & ((char < ZERO) | (char > NINE))).any():
            return None
        value = np.where(inside, value * 10 + (char - ZERO), value)
    return value


def _packed(id_bytes: bytes) -> int:
    """An id of up to MAX_PACKED_ID bytes as one int64: its bytes, then its length on top."""
    return int.from_bytes(id_bytes, "little") | (len(id_bytes) << 56)


def _packed_ids(raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`_packed` of raw[starts[i] : starts[i] + lengths[i]] for every i."""
    key = lengths.astype(np.int64) << 56
    for column in range(int(lengths.max()) if len(lengths) else 0):
        inside = column < lengths
        char = raw[np.where(inside, starts + column, 0)].astype(np.int64)
        key |= np.where(inside, char << (8 * column), 0)
    return key
