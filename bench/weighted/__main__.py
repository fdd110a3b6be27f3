"""Balance by load on skewed weights: stickyd's `load` beside `count`, `per_topic`, `lag-greedy` and
Kafka's UniformAssignor on the same groups, in one run; the targets checked.

    python -m bench.weighted                        # 100,000 x 1,000 and 1,000,000 x 2,000
    python -m bench.weighted --quick                # 2,000 x 50 only: checks that it runs
    python -m bench.weighted --sizes 100000x1000    # chosen sizes

Groups (bench/weighted/instances.py): previous owners as Kafka's assignors leave them
(bench/layouts.py: `sticky`, as the uniform/sticky assignors do, and `range`), unequal
subscriptions, one member leaves; lognormal and Zipf weights; capacities 1, 2 and 4. Each stickyd
row runs `solve_consumer` in a child process of its own (wall and CPU seconds of the solve call
alone, the request already parsed; peak RSS of the process); UniformAssignor runs in the JVM
harness (its time is the assignor call alone, after warm-up calls) and its weighted bottleneck is
summed in Python from the owners it chose. `per_topic` is judged on its CPU seconds beside
`count`'s on the same group (at most 1.5 x, from 1,000,000 partitions). The time limit of the
`load` row is the size's target (2 s up to 100,000 partitions, 10 s above); the other stickyd
rows get 30 s, so that none falls back on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.layouts import write_problem_json
from bench.results import write_section
from bench.weighted.child import run_measured
from bench.weighted.figures import group_of, normalized_loads
from bench.weighted.instances import WEIGHTS, weighted_problem
from bench.weighted.row import WAYS
from bench.weighted.uniform import run_uniform
from stickyd.solvers.time_policy import MAX_TIME_LIMIT_MS

SIZES = [(100_000, 1_000), (1_000_000, 2_000)]
QUICK_SIZES = [(2_000, 50)]
LAYOUTS = ("sticky", "range")
BOTTLENECK_TARGET = 1.05
MOVES_TARGET = 1.10
PER_TOPIC_TARGET = 1.5
FLOAT_SLACK = 1e-9
"""the figures are floats: a bottleneck exactly at 1.05 x the bound may read one rounding above."""
PER_TOPIC_FROM = 1_000_000
UNIFORM = "Kafka UniformAssignor"


def target_s(partitions: int) -> float:
    """The time a load answer must come within: 2 s up to 100,000 partitions, 10 s up to 1,000,000."""
    return 2.0 if partitions <= 100_000 else 10.0


@dataclass
class Instance:
    partitions: int
    members: int
    weights: str
    layout: str
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    """assignor -> figures (None-free: a failed row is left out and named in `missing`)."""
    missing: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.partitions:,} x {self.members:,}"


def run_instance(partitions: int, members: int, weights: str, layout: str, *, kafka: bool, cap_s: float) -> Instance:
    """Every assignor on one group, each in its own process."""
    instance = Instance(partitions, members, weights, layout)
    problem = weighted_problem(partitions, members, weights=weights, layout=layout)
    # `load` within its target; the others with the service's largest limit, so that none of
    # them is cut short into a fallback on a busy machine
    limits = {way: int(target_s(partitions) * 1000) if way == "load" else MAX_TIME_LIMIT_MS for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="stickyd-weighted-") as folder:
        path = write_problem_json(problem, Path(folder) / "group.json")
        for way in WAYS:
            command = [sys.executable, "-m", "bench.weighted.row", str(path), way, str(limits[way])]
            run = run_measured(command, cap_s)
            if run.code == 0:
                instance.rows[way] = json.loads(run.out)
            else:
                instance.missing.append(f"{way} (exit {run.code})")
        if kafka:
            uniform = run_uniform(path, partitions, cap_s)
            if uniform is None:
                instance.missing.append(f"{UNIFORM} (no jars, failed or capped)")
            else:
                instance.rows[UNIFORM] = _uniform_row(problem, uniform)
    return instance


def _uniform_row(problem: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    loads = normalized_loads(group_of(problem), figures["owners"])
    return {
        "wall_s": figures["time_ms"] / 1000,
        "cpu_s": None,
        "rss_before_mb": None,
        "rss_peak_mb": figures["rss_peak_mb"],
        "bottleneck": float(loads.max()),
        "lightest": float(loads.min()),
        "moves": figures["moves"],
        "solver": "UniformAssignor (JVM)",
        "optimal": False,
        "fallback": False,
        "unassigned": figures["unassigned"] + figures["duplicated"],
    }


HEADER = (
    "| group | weights | layout | assignor | wall s | CPU s | peak RSS MB (parsed / solved) | bottleneck (max W/c) | "
    "/ L* bound | moves | / moves bound | answered by |\n"
    "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
)


def table_lines(instance: Instance) -> list[str]:
    load = instance.rows.get("load", {})
    bound, moves_bound = load.get("lower_bound"), load.get("moves_lower_bound")
    lines = []
    for name, row in instance.rows.items():
        cpu = "-" if row["cpu_s"] is None else f"{row['cpu_s']:.3f}"
        parsed = "-" if row["rss_before_mb"] is None else f"{row['rss_before_mb']:.0f}"
        ratio = f"{row['bottleneck'] / bound:.4f}" if bound else "-"
        moves_ratio = f"{row['moves'] / moves_bound:.3f}" if moves_bound else "-"
        answered = row["solver"] + (", proven" if row["optimal"] else "") + (", fallback" if row["fallback"] else "")
        if row["unassigned"]:
            answered += f"; {row['unassigned']} unassigned or given twice"
        lines.append(
            f"| {instance.label} | {instance.weights} | {instance.layout} | {name} | {row['wall_s']:.3f} | {cpu} | "
            f"{parsed} / {row['rss_peak_mb']:.0f} | {row['bottleneck']:,.0f} | {ratio} | {row['moves']:,} | "
            f"{moves_ratio} | {answered} |"
        )
    return lines


def verdicts(instance: Instance) -> list[str]:
    """The targets on one group: time, bottleneck and moves of `load`; per_topic's time beside count's."""
    name = f"{instance.label} {instance.weights} {instance.layout}"
    found = [f"{name}: MISS no answer from {what}" for what in instance.missing]
    load = instance.rows.get("load")
    if load is None:
        return found
    if not load.get("lower_bound") or load.get("moves_lower_bound") is None:
        return [*found, f"{name}: MISS load reported no bounds ({load['solver']})"]
    limit = target_s(instance.partitions)
    bottleneck, moves, floor = load["bottleneck"] / load["lower_bound"], load["moves"], load["moves_lower_bound"]
    checks = [
        (load["wall_s"] <= limit, f"load answered in {load['wall_s']:.3f} s (target {limit:g} s)"),
        (
            load["bottleneck"] <= BOTTLENECK_TARGET * load["lower_bound"] * (1 + FLOAT_SLACK),
            f"bottleneck {bottleneck:.4f} x its proven bound (target {BOTTLENECK_TARGET})",
        ),
        (
            moves <= MOVES_TARGET * floor,
            f"moves {moves:,} against a proven floor of {floor:,} (target x {MOVES_TARGET})",
        ),
    ]
    if "per_topic" in instance.rows and "count" in instance.rows:
        # CPU seconds of the two solves: on a shared machine their ratio holds better than wall time's
        per_topic, count = instance.rows["per_topic"]["cpu_s"], instance.rows["count"]["cpu_s"]
        said = f"per_topic {per_topic:.3f} s of CPU = {per_topic / count:.2f} x count's {count:.3f} s"
        if instance.partitions >= PER_TOPIC_FROM:
            checks.append((per_topic <= PER_TOPIC_TARGET * count, f"{said} (target {PER_TOPIC_TARGET})"))
        else:
            found.append(f"{name}: (figure) {said}; the target holds from {PER_TOPIC_FROM:,} partitions")
    return found + [f"{name}: {'ok' if good else 'MISS'} {text}" for good, text in checks]


def report(instances: list[Instance], load_average: str = "") -> str:
    lines = [line for instance in instances for line in table_lines(instance)]
    checks = [check for instance in instances for check in verdicts(instance)]
    return "\n".join(
        [
            "Balance by load on skewed weights (lognormal: median 985, one partition in 500 fifty times hotter; "
            "Zipf of exponent 2; both capped at 20,000), capacities 1, 2 and 4, unequal subscriptions, one member "
            "leaves, previous owners as Kafka's assignors leave them. `/ L* bound` divides each answer's bottleneck "
            "by the proven lower bound `load` reports for the group; `/ moves bound` divides its moves by the "
            "proven floor on the moves of answers within `load_tolerance` (0.05) of L* (only `load` is held to it). "
            "Wall and CPU seconds are the solve call's (UniformAssignor: the assignor call's wall time after "
            "warm-up calls, as `bench.kafka_assignors` takes it; its CPU is not split from the JVM's); "
            "peak RSS is the process's high-water mark once the "
            "request is parsed and once it is solved (for UniformAssignor, the JVM's at its end: heap, input and "
            "answer). `load` runs with its target as `time_limit_ms`, the other stickyd rows with 30 s. "
            "The machine may have been shared: CPU seconds beside wall seconds show how much." + load_average,
            "",
            HEADER,
            *lines,
            "",
            "Targets:",
            "",
            *(f"- {check}" for check in checks),
        ]
    )


def _load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        partitions, _, members = item.lower().partition("x")
        sizes.append((int(partitions), int(members)))
    return sizes


def main(argv: list[str] | None = None) -> list[Instance]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 x 50 only")
    parser.add_argument("--sizes", type=parse_sizes, help="partitions x members, comma-separated: 100000x1000")
    parser.add_argument("--weights", default=",".join(WEIGHTS), help="lognormal,zipf")
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="sticky,range")
    parser.add_argument("--no-kafka", action="store_true", help="leave out Kafka's UniformAssignor (the JVM)")
    parser.add_argument("--cap-s", type=float, default=600.0, help="a row running longer is a miss")
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    started = _load_average()
    instances = []
    for partitions, members in sizes:
        for weights in args.weights.split(","):
            for layout in args.layouts.split(","):
                instance = run_instance(partitions, members, weights, layout, kafka=not args.no_kafka, cap_s=args.cap_s)
                for line in table_lines(instance) + verdicts(instance):
                    print(line, flush=True)
                instances.append(instance)
    said = f" Load average (1/5/15 min) {started} when the run started, {_load_average()} at its end."
    write_section("Balance by load on skewed weights", report(instances, said))
    return instances


if __name__ == "__main__":
    main()
