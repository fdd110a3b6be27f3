"""What partitions weigh and what members can take (balance `load`), checked field by field.

`partition_weights` maps a topic to one weight for all its partitions or a list of one weight per
partition; the string "live" asks for measured rates instead. Weights are integers from 0 to
MAX_WEIGHT; what they measure (records/s, bytes/s, lag) is the caller's choice, only ratios
matter. docs/wire-format.md, "What balanced means", is the definition.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from stickyd.models.errors import ProblemError

MAX_WEIGHT = 10**12
"""heaviest partition weight: 10^6 partitions of it still sum within a 64-bit integer."""
MAX_CAPACITY = 10**6
"""largest member capacity."""
LIVE = "live"

Weight = Annotated[int, Field(ge=0, le=MAX_WEIGHT)]
PartitionWeights = dict[Annotated[str, Field(min_length=1)], Weight | list[Weight]] | Literal["live"]


def check_partition_weights(weights: Any, topics: dict[str, int]) -> None:
    """Raise ProblemError naming the first entry of `partition_weights` that does not fit."""
    if weights is None or weights == LIVE:
        return
    if not isinstance(weights, dict):
        raise ProblemError("partition_weights", 'expected an object of topic -> weight(s), or "live"')
    for topic, given in weights.items():
        where = f"partition_weights.{topic}"
        if topic not in topics:
            raise ProblemError(where, f"unknown topic {topic!r} (not in topics)")
        if isinstance(given, list):
            if len(given) != topics[topic]:
                raise ProblemError(
                    where,
                    f"{len(given)} weights, but {topic} has {topics[topic]} partitions (one weight per partition)",
                )
            for p, weight in enumerate(given):
                _check_weight(f"{where}[{p}]", weight)
        else:
            _check_weight(where, given)


def _check_weight(where: str, weight: Any) -> None:
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ProblemError(where, f"expected an integer weight, got {type(weight).__name__}")
    if isinstance(weight, float):
        raise ProblemError(where, f"{weight} is not an integer (weights are integers from 0 to 10^12)")
    if weight < 0:
        raise ProblemError(where, f"{weight} is negative (weights are integers from 0 to 10^12)")
    if weight > MAX_WEIGHT:
        raise ProblemError(where, f"{weight} is over 10^12 (the heaviest weight a partition may have)")
