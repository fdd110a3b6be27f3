"""What an assignor balances (`balance`, `load_tolerance`), what partitions weigh and what this
member can take (docs/wire-format.md, "What balanced means"), shared by the kafka-python and
aiokafka assignors.

A bad setting is refused when the assignor is built (ValueError), never in a rebalance. Weights
are read once per rebalance (a callable is called then) and made to fit the round: topics the
group does not read are left out, rates are rounded to integers, and an entry that does not fit
(a list whose length is not the topic's partition count, a negative number) is left out with a
warning, so that topic weighs the mean of the others. A rebalance is never refused for its weights.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from stickyd.models.consumer.problem import Balance
from stickyd.models.consumer.weights import LIVE, MAX_CAPACITY, MAX_WEIGHT

log = logging.getLogger(__name__)

TopicWeights = Mapping[str, float | Sequence[float]]
WeightsSource = TopicWeights | Callable[[], TopicWeights | None] | str | None
"""a dict of topic -> weight(s), a callable returning one per rebalance, or "live"."""

BALANCES: tuple[str, ...] = get_args(Balance)


@dataclass(frozen=True)
class LoadSettings:
    balance: str | None = None
    load_tolerance: float | None = None
    partition_weights: WeightsSource = None
    capacity: int | None = None
    """this member's: sent in its subscription user data, read by the leader."""

    def __post_init__(self) -> None:
        if self.balance is not None and self.balance not in BALANCES:
            raise ValueError(f"balance: {self.balance!r} is not one of {', '.join(BALANCES)}")
        tolerance = self.load_tolerance
        if tolerance is not None and (isinstance(tolerance, bool) or not 0 <= tolerance <= 1):
            raise ValueError(f"load_tolerance: {tolerance!r} is not a number from 0 to 1")
        capacity = self.capacity
        if capacity is not None and (not _is_int(capacity) or not 1 <= capacity <= MAX_CAPACITY):
            raise ValueError(f"capacity: {capacity!r} is not an integer from 1 to {MAX_CAPACITY}")
        weights = self.partition_weights
        if isinstance(weights, str) and weights != LIVE:
            raise ValueError(f'partition_weights: {weights!r} is not "live", a dict or a callable')

    def options(self) -> dict[str, Any]:
        """The request's `options` entries these settings add."""
        added: dict[str, Any] = {}
        if self.balance is not None:
            added["balance"] = self.balance
        if self.load_tolerance is not None:
            added["load_tolerance"] = self.load_tolerance
        return added

    def weights(self, topics: Mapping[str, int]) -> dict[str, Any] | str | None:
        """This round's `partition_weights` for a problem of `topics` (None: send none)."""
        source = self.partition_weights
        if isinstance(source, str):
            return source  # "live", checked when built
        given: object = source
        if callable(source):
            try:
                given = source()
            except Exception:  # noqa: BLE001 - a failing weights source must not fail the rebalance
                log.warning("partition_weights source failed; this rebalance sends no weights", exc_info=True)
                return None
        if given is None:
            return None
        if not isinstance(given, Mapping):
            log.warning("partition_weights: expected a dict of topic -> weight(s), got %s", type(given).__name__)
            return None
        return fit_weights(given, topics)


def fit_weights(given: TopicWeights, topics: Mapping[str, int]) -> dict[str, Any] | None:
    """`given` made to fit `topics` (module docstring); None when nothing is left."""
    fitted: dict[str, Any] = {}
    for topic, value in given.items():
        if topic not in topics:
            continue
        if isinstance(value, Sequence) and not isinstance(value, str):
            weights = [_weight(w) for w in value]
            if len(weights) != topics[topic] or None in weights:
                log.warning(
                    "partition_weights.%s: %d weights for %d partitions (or a bad weight); left out",
                    topic,
                    len(weights),
                    topics[topic],
                )
                continue
            fitted[topic] = weights
        elif (weight := _weight(value)) is not None:
            fitted[topic] = weight
        else:
            log.warning("partition_weights.%s: %r is not a weight from 0 to 10^12; left out", topic, value)
    return fitted or None


def _weight(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    rounded = round(value)
    return rounded if 0 <= rounded <= MAX_WEIGHT else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
