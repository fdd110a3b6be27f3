"""Kafka's UniformAssignor (the KIP-848 group coordinator's default) on a weighted group, through
plugins/kafka's harness `ConsumerAssignorBench` (bench/kafka_assignors.py describes it): its time,
moves, peak memory, and the owners it chose, written by the harness to a file so that the weights
it ignores can be summed here."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.kafka_assignors import BENCH_CLASS
from bench.weighted.child import run_measured
from tests.kafka.jvm import APP_CLASSPATH, kafka_jars_built

ASSIGNOR = "uniform"
LARGE = 100_000
"""from this many partitions on, the JVM gets a 6 GB heap and one warm-up call (else 1 GB, three)."""


def run_uniform(problem_file: Path, partitions: int, cap_s: float) -> dict[str, Any] | None:
    """The harness's figures for UniformAssignor plus `owners` (flat member index per partition) and
    `rss_peak_mb` (the JVM's), or None when the jars are not built, the JVM fails or runs past cap_s."""
    if not kafka_jars_built():
        return None
    large = partitions >= LARGE
    heap, rounds, warm_ups = ("-Xmx6g", "1", "1") if large else ("-Xmx1g", "2", "3")
    with tempfile.TemporaryDirectory(prefix="stickyd-weighted-") as folder:
        command = ["java", heap, "-XX:+UseSerialGC", "-cp", APP_CLASSPATH, BENCH_CLASS, str(problem_file)]
        run = run_measured([*command, ASSIGNOR, rounds, warm_ups, folder], cap_s)
        owners_file = Path(folder) / f"{ASSIGNOR}.owners"
        if run.code != 0 or not owners_file.exists():
            return None
        owners = np.fromfile(owners_file, dtype=">i4").astype(np.int64)
    figures: dict[str, Any] = json.loads(run.out)[ASSIGNOR]
    figures["owners"] = owners
    figures["rss_peak_mb"] = run.rss_peak_mb
    return figures
