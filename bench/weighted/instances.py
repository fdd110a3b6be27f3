"""Weighted consumer groups: Kafka-like previous layouts (bench/layouts.py) with skewed partition
weights and members of capacity 1, 2 or 4, as request JSON (docs/wire-format.md, balance `load`).

Weights (`WEIGHTS`), records/s per partition, deterministic for a seed:
- `lognormal`: median about 985, sigma 1; one partition in 500 fifty times hotter; capped at 20,000;
- `zipf`: 500 x a Zipf draw of exponent 2 (most partitions 500, a heavy tail), capped at 20,000.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.layouts import kafka_like_problem

WEIGHTS = ("lognormal", "zipf")
MEDIAN = 985
SIGMA = 1.0
HOT_EVERY = 500
HOT_FACTOR = 50
ZIPF_EXPONENT = 2.0
ZIPF_SCALE = 500
WEIGHT_CAP = 20_000
CAPACITIES = (1, 2, 4)


def skewed_weights(rng: np.random.Generator, count: int, kind: str) -> np.ndarray:
    """`count` integer weights of the named distribution (1 to WEIGHT_CAP)."""
    if kind == "lognormal":
        weights = rng.lognormal(np.log(MEDIAN), SIGMA, count)
        weights[rng.random(count) < 1 / HOT_EVERY] *= HOT_FACTOR
    elif kind == "zipf":
        weights = rng.zipf(ZIPF_EXPONENT, count).astype(np.float64) * ZIPF_SCALE
    else:
        raise ValueError(f"weights in {WEIGHTS}, not {kind!r}")
    return np.clip(np.rint(weights), 1, WEIGHT_CAP).astype(np.int64)


def weighted_problem(
    partitions: int,
    members: int,
    *,
    weights: str = "lognormal",
    layout: str = "sticky",
    shape: str = "unequal",
    event: str = "leave",
    seed: int = 7,
) -> dict[str, Any]:
    """`bench.layouts.kafka_like_problem` with per-partition weights of kind `weights` and every
    member a capacity drawn from CAPACITIES; `options` is left for the caller."""
    problem = kafka_like_problem(partitions, members, layout=layout, shape=shape, event=event, seed=seed)
    rng = np.random.default_rng(seed + 1)
    problem["partition_weights"] = {
        topic: skewed_weights(rng, count, weights).tolist() for topic, count in problem["topics"].items()
    }
    for member in problem["members"]:
        member["capacity"] = int(rng.choice(CAPACITIES))
    return problem
