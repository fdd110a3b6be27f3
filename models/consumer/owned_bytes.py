"""The members' `owned` maps read straight from their JSON bytes into claim columns (numpy), with
no Python object per topic list or partition number.

The input is each member's `owned` value exactly as sent (msgspec checked that it is well-formed
JSON). The bytes are accepted only when they are plainly `{"topic": [n, ...], ...}` with
non-negative int32 numbers, non-empty keys without escapes, valid UTF-8, and no key twice in one
map; for anything else this returns None and the caller takes the exact path (decode, then
`stickyd.models.consumer.owned.owned_columns`), which names the bad item in its 422. So this never decides
an error, it only makes the common case cheap.

Given well-formed JSON, the shape is checked by counts over the characters outside strings:
only `{}[],:"`, digits and whitespace occur; one `{` per map (no nested objects); as many `:` as
strings (every string is a key) and as many `[` as `:` with each `:` followed by `[` (every
value is one flat list, so list items can only be numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.owned import OwnedColumns
from stickyd.models.int_ranges import INT32_MAX

QUOTE, COLON, OPEN_LIST, OPEN_MAP, COMMA, CLOSE_LIST, CLOSE_MAP = b'":[{,]}'
WHITESPACE = b" \t\n\r"
DIGITS = b"0123456789"
MAX_DIGITS = 10
"""an int32 has at most 10 decimal digits."""
_ALLOWED = np.zeros(256, dtype=bool)
_ALLOWED[list(b'":[{,]}' + WHITESPACE + DIGITS)] = True
_IS_SPACE = np.zeros(256, dtype=bool)
_IS_SPACE[list(WHITESPACE)] = True
DENSE_PAIRS = 1 << 25
"""(member, topic) pairs up to which repeated keys are counted in a table rather than sorted."""
_HASH_STEP = np.uint64(1_099_511_628_211)
"""FNV's 64-bit prime: keys are fingerprinted 8 bytes at a time (matches are then compared)."""
_KEEP_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
"""_KEEP_BYTES[k]: the low k bytes of a little-endian word."""


@dataclass(frozen=True)
class _Keys:
    open_at: np.ndarray
    """offset of each key's opening quote in the joined bytes."""
    length: np.ndarray


def owned_columns_from_json(
    raws: Sequence[bytes], member_of_raw: np.ndarray, topic_position: dict[str, int]
) -> OwnedColumns | None:
    """The claims of the `owned` maps `raws` (raws[i] belongs to member `member_of_raw[i]`, in
    request order) as columns, or None when anything is not plainly a claim map."""
    if not raws:
        nothing = np.zeros(0, dtype=np.int64)
        return OwnedColumns(nothing, nothing, nothing)
    if any(raw[:1] != b"{" for raw in raws):
        return None
    joined = b"".join(raws)
    if b"\\" in joined:
        return None
    text = np.frombuffer(joined, dtype=np.uint8)
    quotes = np.flatnonzero(text == QUOTE)
    keys = _Keys(quotes[0::2], quotes[1::2] - quotes[0::2] - 1)
    outside = _outside_strings(text, quotes)
    counts = np.bincount(outside, minlength=256)
    if counts[~_ALLOWED].any() or counts[OPEN_MAP] != len(raws):
        return None
    if counts[list(WHITESPACE)].any():
        outside = outside[~_IS_SPACE[outside]]
    colons = np.flatnonzero(outside == COLON)
    if not (len(keys.open_at) == len(colons) == counts[OPEN_LIST]):
        return None
    if len(colons) and not (outside[colons + 1] == OPEN_LIST).all():
        return None
    if len(keys.length) and int(keys.length.min()) == 0:
        return None
    numbers = _numbers(outside)
    if numbers is None:
        return None
    starts, partition = numbers
    topic_of_key = _topics_of_keys(text, keys, topic_position)
    if topic_of_key is None:
        return None
    # every string is a key: a map's keys are the quotes inside its bytes, halved
    raw_ends = np.cumsum(np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)))
    keys_per_raw = np.diff(np.searchsorted(quotes, raw_ends), prepend=0) // 2
    member_of_key = np.repeat(np.asarray(member_of_raw, dtype=np.int64), keys_per_raw)
    if _repeated_key(member_of_key, topic_of_key, text, keys):
        return None
    # the k-th list opens at the k-th `[`; a number belongs to the last list opened before it
    list_of_number = np.cumsum(outside == OPEN_LIST, dtype=np.int64)[starts] - 1
    return OwnedColumns(member_of_key[list_of_number], topic_of_key[list_of_number], partition)


def _outside_strings(text: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """The characters outside strings, each string kept as its closing quote alone."""
    # segments: [0, first open), then from each closing quote up to the next opening quote
    seg_start = np.concatenate([[0], quotes[1::2]]).astype(np.int64)
    seg_end = np.append(quotes[0::2], len(text)).astype(np.int64)
    seg_len = seg_end - seg_start
    total = int(seg_len.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint8)
    out_at = np.cumsum(seg_len) - seg_len
    kind = np.int32 if len(text) < 2**31 - 1 else np.int64
    index: np.ndarray = np.arange(total, dtype=kind)
    np.add(index, np.repeat((seg_start - out_at).astype(kind), seg_len), out=index)
    return text[index]


def _numbers(outside: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(where each number starts in `outside`, its value) for every run of digits; None when a
    run is longer than an int32 can be or its value is beyond int32."""
    digit = (outside >= ord("0")) & (outside <= ord("9"))
    edges = np.diff(digit.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    if len(lengths) and int(lengths.max()) > MAX_DIGITS:
        return None
    value = outside[starts].astype(np.int64) - ord("0")
    for k in range(1, int(lengths.max()) if len(lengths) else 0):
        at = np.flatnonzero(lengths > k)
        value[at] = value[at] * 10 + (outside[starts[at] + k].astype(np.int64) - ord("0"))
    if len(value) and int(value.max()) > INT32_MAX:
        return None
    return starts, value


def _key_words(text: np.ndarray, first: np.ndarray, length: np.ndarray, count: int) -> list[np.ndarray]:
    """Bytes 8w..8w+7 of every key (starting at `first`, `length` bytes) as one little-endian
    word each, bytes past the key's end zeroed, for w < `count`; `text` must extend 8 * count
    bytes past the last key."""
    words = np.ndarray((len(text) - 7,), dtype="<u8", buffer=text, strides=(1,))  # a word at every byte
    return [words[first + 8 * w] & _KEEP_BYTES[np.clip(length - 8 * w, 0, 8)] for w in range(count)]


def _fingerprint(words: list[np.ndarray], length: np.ndarray) -> np.ndarray:
    digest = length.astype(np.uint64)
    for word in words:
        digest = (digest * _HASH_STEP) ^ word
    return digest


def _topics_of_keys(text: np.ndarray, keys: _Keys, topic_position: dict[str, int]) -> np.ndarray | None:
    """Each key's position in `topic_position` (-1 when it names no topic), matched by bytes
    8 at a time: fingerprinted, then every match compared word by word. None when a key that
    names no topic is not valid UTF-8."""
    topic = np.full(len(keys.length), -1, dtype=np.int64)
    names = [name.encode() for name in topic_position]
    if len(topic) and names:
        count = (max(map(len, names)) + 7) // 8
        padded = np.concatenate([text, np.zeros(8 * count + 8, dtype=np.uint8)])
        key_words = _key_words(padded, keys.open_at + 1, keys.length, count)
        name_lengths = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
        name_text = np.frombuffer(b"".join(names) + bytes(8 * count + 8), dtype=np.uint8)
        name_first = np.cumsum(name_lengths) - name_lengths
        name_words = _key_words(name_text, name_first, name_lengths, count)
        table = _fingerprint(name_words, name_lengths)
        order = np.argsort(table, kind="stable")
        if len(np.unique(table)) != len(names):
            return None  # two topic names share a fingerprint: leave it to the exact path
        at = np.minimum(np.searchsorted(table[order], _fingerprint(key_words, keys.length)), len(names) - 1)
        candidate = order[at]
        same = name_lengths[candidate] == keys.length
        for key_word, name_word in zip(key_words, name_words, strict=True):
            same &= key_word == name_word[candidate]
        positions = np.fromiter(topic_position.values(), dtype=np.int64, count=len(names))
        topic[same] = positions[candidate[same]]
    for i in np.flatnonzero(topic < 0).tolist():
        start = int(keys.open_at[i]) + 1
        try:
            text[start : start + int(keys.length[i])].tobytes().decode()
        except UnicodeDecodeError:
            return None
    return topic


def _repeated_key(member: np.ndarray, topic: np.ndarray, text: np.ndarray, keys: _Keys) -> bool:
    """Whether some map has a key twice (known topics by position, unknown ones by their bytes)."""
    known = topic >= 0
    if known.any():
        width = int(topic.max()) + 1
        pair = member[known] * width + topic[known]
        if int(pair.max()) < DENSE_PAIRS:
            if int(np.bincount(pair).max()) > 1:
                return True
        elif len(np.unique(pair)) != len(pair):
            return True
    seen: set[tuple[int, bytes]] = set()
    for i in np.flatnonzero(~known).tolist():
        start = int(keys.open_at[i]) + 1
        key = (int(member[i]), text[start : start + int(keys.length[i])].tobytes())
        if key in seen:
            return True
        seen.add(key)
    return False
