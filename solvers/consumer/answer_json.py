"""The consumer answer's JSON bytes written straight from integer columns.

`{member: {topic: [partitions]}}` for a million partitions would otherwise be a million Python
lists made only to be serialised. Here every partition contributes two byte segments
(what opens its topic's list, closing the one before, or the comma before it; then its decimal
digits), all cut from one table of bytes: the digits of every partition number, and each
topic's opening `"topic":[` with and without a leading `],`. One
gather over the table writes all of them; the members' entries are then joined around the
slices. The bytes parse to exactly what `ConsumerSolution.model_dump_json()` gives.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson

Columns = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(member, topic, partition), sorted in that order."""

DIGITS = 10
"""an int32 partition number has at most 10 decimal digits."""
_POWERS = np.array([10**k for k in range(1, DIGITS)], dtype=np.int64)


def json_name(name: str) -> bytes:
    return orjson.dumps(name)


def nested_json(member_names: Sequence[bytes], topic_names: Sequence[bytes], columns: Columns) -> bytes:
    """`{"member":{"topic":[p,...],...},...}` with an entry (maybe `{}`) for every member, in
    order; `member_names`/`topic_names` are JSON strings (quoted, escaped)."""
    member, topic, partition = columns
    body, row_at = _grouped_lists(topic_names, member, topic, partition)
    # member m's rows are bounds[m]:bounds[m + 1], its bytes row_at[...] of `body`
    bounds = np.searchsorted(member, np.arange(len(member_names) + 1))
    at = row_at[bounds].tolist()
    view = body.data
    parts: list[bytes | memoryview] = [b"{"]
    for m, name in enumerate(member_names):
        if m:
            parts.append(b",")
        if at[m] == at[m + 1]:
            parts += (name, b":{}")
        else:
            parts += (name, b":{", view[at[m] : at[m + 1]], b"]}")
    parts.append(b"}")
    return b"".join(parts)


def topic_lists_json(topic_names: Sequence[bytes], topic: np.ndarray, partition: np.ndarray) -> bytes:
    """`{"topic":[p,...],...}` from columns sorted by (topic, partition)."""
    if not len(topic):
        return b"{}"
    body, _ = _grouped_lists(topic_names, np.zeros(len(topic), dtype=np.int64), topic, partition)
    return b"{" + body.tobytes() + b"]}"


def _grouped_lists(
    topic_names: Sequence[bytes], member: np.ndarray, topic: np.ndarray, partition: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each member's `"topic":[p,...],"topic":[p,...` (its last list left open), laid end to
    end, and the byte offset where each row's text starts (plus the total length at the end)."""
    n = len(partition)
    if not n:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = member[1:] != member[:-1]
    opens = first.copy()
    opens[1:] |= topic[1:] != topic[:-1]
    # the table: each row's digits (right-aligned), then per topic '"t":[' and '],"t":[', then ','
    numbers = _digit_rows(partition)
    heads = [name + b":[" for name in topic_names]
    text = b"".join(heads) + b"".join(b"]," + h for h in heads) + b","
    head_len = np.array([len(h) for h in heads], dtype=np.int64)
    head_at = numbers.size + np.concatenate([[0], np.cumsum(head_len)[:-1]]).astype(np.int64)
    close_head_at = head_at + int(head_len.sum()) + 2 * np.arange(len(heads), dtype=np.int64)
    comma_at = numbers.size + len(text) - 1
    table = np.concatenate([numbers.reshape(-1), np.frombuffer(text, dtype=np.uint8)])

    # two segments per row: what comes before the number (a list's opening, or a comma), its digits
    lead_at = np.where(opens, np.where(first, head_at[topic], close_head_at[topic]), comma_at)
    lead_len = np.where(opens, head_len[topic] + 2 * (opens & ~first), 1)
    digits = 1 + np.searchsorted(_POWERS, partition, side="right")
    width = numbers.shape[1]
    numbers_at = np.arange(width, (n + 1) * width, width, dtype=np.int64) - digits
    seg_at = np.stack([lead_at, numbers_at], axis=1).reshape(-1)
    seg_len = np.stack([lead_len, digits], axis=1).reshape(-1)
    out_at = np.cumsum(seg_len) - seg_len
    body = _gather(table, seg_at, seg_len, out_at)
    return body, np.append(out_at[0::2], len(body))


def _digit_rows(numbers: np.ndarray) -> np.ndarray:
    """Row i: the decimal digits of numbers[i] (>= 0), right-aligned in ASCII, zero-padded."""
    largest = int(numbers.max())
    width = int(1 + np.searchsorted(_POWERS, largest, side="right"))
    if 2 * (largest + 1) <= len(numbers):
        # partition numbers repeat (a million partitions over a few thousand numbers): each
        # distinct value's digits are written once, then every row is read from that table
        return _digit_rows_of(np.arange(largest + 1, dtype=np.int64), width)[numbers]
    return _digit_rows_of(numbers, width)


def _digit_rows_of(numbers: np.ndarray, width: int) -> np.ndarray:
    rows = np.empty((len(numbers), width), dtype=np.uint8)
    rest = numbers.copy()
    for k in range(width - 1, -1, -1):
        rows[:, k] = rest % 10
        rest //= 10
    rows += 48
    return rows


def _gather(table: np.ndarray, seg_at: np.ndarray, seg_len: np.ndarray, out_at: np.ndarray) -> np.ndarray:
    """table[seg_at[i] : seg_at[i] + seg_len[i]] for every i, laid end to end (segment i
    starting at out_at[i])."""
    total = int(out_at[-1] + seg_len[-1]) if len(seg_len) else 0
    small = max(total, len(table)) < 2**31 - 1
    kind = np.int32 if small else np.int64  # half the memory traffic for any realistic answer
    index = np.arange(total, dtype=kind)
    np.add(index, np.repeat((seg_at - out_at).astype(kind), seg_len), out=index)
    return table[index]
