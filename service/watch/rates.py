"""Produce rates from end offsets sampled over a sliding window; no Kafka, no clock of its own.

A partition's rate is (newest end offset - oldest end offset in the window) / (time between the two
samples), in records per second. The window keeps, per partition, the samples of the last
`window_s` seconds and the newest one before them, so that once it is full a rate spans at least
the whole window; until then it spans what has been seen (two samples at least). An end offset that
goes down (the topic was deleted and created again, or the log was truncated) starts the
partition's history again; a partition missing from a sample (its topic was deleted) is forgotten.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from stickyd.models.consumer.weights import MAX_WEIGHT

UNMEASURED = -1
"""the rate of a partition seen fewer than twice (new, or just reset)."""


@dataclass(frozen=True)
class LiveRates:
    """What the watcher measured last: per topic, one rate per partition (records/s rounded to an
    integer, UNMEASURED where there is none yet). Immutable: the watcher replaces it whole."""

    topics: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    """topic id (as Kafka prints it, the key the KIP-848 plug-in sends) -> topic name."""
    window_s: float = 0.0
    """the span the newest rates cover (seconds)."""
    sampled_at: float | None = None
    """wall-clock time (Unix seconds) of the newest sample; None before the first."""

    def measured(self, topic: str) -> tuple[int, ...] | None:
        """The rates of `topic` (by name or by id) when at least one partition of it has a rate."""
        rates = self.topics.get(self.ids.get(topic, topic))
        return rates if rates is not None and any(r != UNMEASURED for r in rates) else None


class RateWindow:
    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._history: dict[tuple[str, int], deque[tuple[float, int]]] = {}

    def add(self, at: float, ends: Mapping[tuple[str, int], int]) -> None:
        """One sample: every partition's end offset at monotonic time `at`."""
        for gone in self._history.keys() - ends.keys():
            del self._history[gone]
        for key, end in ends.items():
            history = self._history.setdefault(key, deque())
            if history and end < history[-1][1]:
                history.clear()  # the counter went back: the topic was created again
            history.append((at, end))
            # keep the newest sample at or before the window's start, drop older ones
            while len(history) > 2 and history[1][0] <= at - self.window_s:
                history.popleft()

    def rates(self) -> dict[str, tuple[int, ...]]:
        """topic -> one rate per partition (0 .. highest partition seen), UNMEASURED where there is none."""
        by_topic: dict[str, dict[int, int]] = {}
        for (topic, partition), history in self._history.items():
            by_topic.setdefault(topic, {})[partition] = _rate(history)
        return {
            topic: tuple(per.get(p, UNMEASURED) for p in range(max(per) + 1)) for topic, per in sorted(by_topic.items())
        }

    def span_s(self) -> float:
        """The longest span a current rate covers."""
        return max((h[-1][0] - h[0][0] for h in self._history.values()), default=0.0)


def _rate(history: deque[tuple[float, int]]) -> int:
    if len(history) < 2 or history[-1][0] <= history[0][0]:
        return UNMEASURED
    (first_at, first), (last_at, last) = history[0], history[-1]
    return min(MAX_WEIGHT, round((last - first) / (last_at - first_at)))
