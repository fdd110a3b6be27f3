"""bench/weighted keeps working and its figures are right: the groups it builds carry the weights
and capacities it says, a weighted bottleneck summed by hand, every row of a tiny run (Kafka's
UniformAssignor through the JVM harness when its jars are built) with valid answers whose moves the
harness and Python count alike, the targets it checks, and its section of bench/RESULTS.md.
Timings are the benchmark's business, not asserted here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import results
from bench.layouts import write_problem_json
from bench.weighted.__main__ import UNIFORM, Instance, main, report, run_instance, verdicts
from bench.weighted.figures import group_of, normalized_loads, owners_of
from bench.weighted.instances import CAPACITIES, WEIGHT_CAP, skewed_weights, weighted_problem
from bench.weighted.row import WAYS
from bench.weighted.uniform import run_uniform
from stickyd.solvers import solve_consumer
from tests.conftest import assert_valid
from tests.kafka.jvm import kafka_jars_built

SIZE, MEMBERS = 1_500, 12
"""beyond the exact model's 4,000 (unit, member) pairs: the heuristic answers, as at scale."""


def test_skewed_weights_have_the_named_shape() -> None:
    """lognormal: median about 985, about one partition in 500 fifty times hotter, capped; Zipf:
    multiples of 500 with most partitions at 500; both integers from 1 to the cap."""
    rng = np.random.default_rng(1)
    lognormal = skewed_weights(rng, 200_000, "lognormal")
    assert 900 < np.median(lognormal) < 1_070
    assert lognormal.min() >= 1 and lognormal.max() == WEIGHT_CAP
    zipf = skewed_weights(rng, 200_000, "zipf")
    assert (zipf % 500 == 0).all() and np.median(zipf) == 500 and zipf.max() == WEIGHT_CAP
    with pytest.raises(ValueError, match="weights in"):
        skewed_weights(rng, 3, "uniform")


def test_a_weighted_group_has_one_weight_per_partition_and_capacities_1_2_4() -> None:
    problem = weighted_problem(2_000, 20, weights="zipf", layout="range")
    for topic, count in problem["topics"].items():
        assert len(problem["partition_weights"][topic]) == count
    assert {m["capacity"] for m in problem["members"]} <= set(CAPACITIES)
    assert len(problem["members"]) == 20  # one of 21 left


def test_normalized_loads_sum_weights_over_capacity() -> None:
    """Hand count: a holds t0 (5) and t1 (3) at capacity 2 -> 4; b holds t2 (7) at capacity 1 -> 7."""
    problem = {
        "topics": {"t": 3},
        "partition_weights": {"t": [5, 3, 7]},
        "members": [{"id": "a", "topics": ["t"], "capacity": 2}, {"id": "b", "topics": ["t"]}],
    }
    group = group_of(problem)
    owner = owners_of(group, {"a": {"t": [0, 1]}, "b": {"t": [2]}})
    assert owner.tolist() == [0, 0, 1]
    assert normalized_loads(group, owner).tolist() == [4.0, 7.0]


def _moves(problem: dict, owner: np.ndarray) -> int:
    """Claimed partitions (first claimer, as the harness and stickyd count) ending elsewhere."""
    group = group_of(problem)
    claimant = np.full(len(group.weights), -1)
    for m, member in enumerate(problem["members"]):
        for topic, partitions in member.get("owned", {}).items():
            flat = group.offsets[topic] + np.asarray(partitions, dtype=np.int64)
            claimant[flat] = np.where(claimant[flat] < 0, m, claimant[flat])
    return int(((claimant >= 0) & (owner != claimant)).sum())


def test_a_tiny_run_gives_every_row_valid_answers_and_the_targets(tmp_path: Path) -> None:
    kafka = kafka_jars_built()
    instance = run_instance(SIZE, MEMBERS, "lognormal", "sticky", kafka=kafka, cap_s=120)
    assert instance.missing == []
    assert set(instance.rows) == set(WAYS) | ({UNIFORM} if kafka else set())
    load = instance.rows["load"]
    for name, row in instance.rows.items():
        assert row["unassigned"] == 0, name
        assert row["bottleneck"] >= load["lower_bound"] * (1 - 1e-9), name
        assert row["rss_peak_mb"] > 0 and row["wall_s"] > 0, name
    assert load["moves"] >= load["moves_lower_bound"]
    assert load["reported_max"] == pytest.approx(load["bottleneck"])
    # the answer the row measured is the solver's, valid
    problem = weighted_problem(SIZE, MEMBERS, weights="lognormal", layout="sticky")
    request = {**problem, "options": {**WAYS["load"], "time_limit_ms": 2_000}}
    solution = solve_consumer(request)
    assert_valid(request, solution)
    assert solution.stats.moves == load["moves"]
    if kafka:
        uniform = run_uniform(write_problem_json(problem, tmp_path / "group.json"), SIZE, 120)
        assert uniform is not None and (uniform["owners"] >= 0).all()
        assert _moves(problem, uniform["owners"]) == uniform["moves"] == instance.rows[UNIFORM]["moves"]
    lines = verdicts(instance)
    assert any("bottleneck" in line for line in lines) and any("moves" in line for line in lines)
    assert all(" ok " in line or " MISS " in line or "(figure)" in line for line in lines)


def test_verdicts_name_a_miss_and_a_missing_row() -> None:
    row = {"wall_s": 3.0, "bottleneck": 110.0, "lower_bound": 100.0, "moves": 12, "moves_lower_bound": 10}
    instance = Instance(100_000, 1_000, "zipf", "range", rows={"load": row}, missing=["count (exit 1)"])
    lines = verdicts(instance)
    assert "MISS no answer from count (exit 1)" in lines[0]
    assert [line.split(": ")[1].split()[0] for line in lines[1:]] == ["MISS", "MISS", "MISS"]


def test_per_topic_is_judged_on_cpu_beside_count_from_a_million_partitions() -> None:
    """per_topic within 1.5 x count's CPU seconds is ok, beyond is a MISS (wall time aside); below
    1,000,000 partitions the ratio is a figure, not a verdict."""
    load = {"wall_s": 1.0, "bottleneck": 100.0, "lower_bound": 100.0, "moves": 10, "moves_lower_bound": 10}

    def per_topic_line(partitions: int, per_topic_cpu: float) -> str:
        rows = {
            "load": load,
            "count": {"wall_s": 9.0, "cpu_s": 2.0},
            "per_topic": {"wall_s": 1.0, "cpu_s": per_topic_cpu},
        }
        lines = verdicts(Instance(partitions, 2_000, "zipf", "range", rows=rows))
        return next(line for line in lines if "per_topic" in line)

    assert " ok per_topic 2.900 s of CPU = 1.45 x" in per_topic_line(1_000_000, 2.9)
    assert " MISS per_topic 3.100 s of CPU = 1.55 x" in per_topic_line(1_000_000, 3.1)
    assert "(figure) per_topic 3.100 s of CPU" in per_topic_line(100_000, 3.1)


def test_the_program_writes_its_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    instances = main(["--sizes", "1500x10", "--weights", "zipf", "--layouts", "range", "--no-kafka"])
    text = (tmp_path / "RESULTS.md").read_text()
    assert "## Balance by load on skewed weights" in text
    assert text.count("| 1,500 x 10 | zipf | range |") == len(WAYS)
    assert "Load average (1/5/15 min)" in text
    assert all(line in text for line in report(instances).splitlines())
