"""PySpark pipeline benchmark: a generated fleet planned on `local[1]` and `local[2]` in one run,
and a churn replay (traces x events x five strategies).

    python -m bench.pipeline                      # 10,000 groups; 1,000 traces x 20 events
    python -m bench.pipeline --groups 500 --traces 50 --quick   # a few minutes

Each plan runs in a fresh SparkSession; the fleet is generated once (seed 7) and reused.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from bench.results import write_section
from stickyd.pipeline.churn.replay import ReplayOptions, replay
from stickyd.pipeline.generate import FleetShape, fleet_rows, trace_rows, write_jsonl
from stickyd.pipeline.plan import PlanOptions, plan
from stickyd.pipeline.spark import spark_session

TARGET_S = 300.0
TARGET_SPEEDUP = 1.6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--traces", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--time-limit-ms", type=int, default=2_000)
    parser.add_argument("--quick", action="store_true", help="do not write bench/RESULTS.md")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stickyd-bench-pipeline-"))
    started = time.monotonic()
    write_jsonl(work / "fleet.jsonl", fleet_rows(7, FleetShape(groups=args.groups)))
    write_jsonl(work / "traces.jsonl", trace_rows(7, args.traces, args.events))
    print(f"generated {args.groups} groups and {args.traces} traces in {time.monotonic() - started:.0f} s", flush=True)
    plans: list[tuple[str, float, dict[str, float]]] = []
    stats = None
    for master in args.masters.split(","):
        session = spark_session(master, f"bench-plan-{master}")
        summary = plan(session, PlanOptions(snapshot=str(work / "fleet.jsonl"), out=work / f"plan-{master}",
                                            time_limit_ms=args.time_limit_ms), say=print)  # fmt: skip
        session.stop()
        stats = pq.read_table(work / f"plan-{master}" / "stats").to_pandas()
        figures = {
            "rows": summary.rows, "solved": summary.solved, "rejected": summary.rejected,
            "optimal": int(stats["optimal"].sum()), "fallbacks": int(stats["fallback"].sum()),
            "solve_s": float(stats["time_ms"].sum() / 1000), "p99_ms": float(stats["time_ms"].quantile(0.99)),
            "max_ms": float(stats["time_ms"].max()),
        }  # fmt: skip
        plans.append((master, summary.wall_s, figures))
        print(f"{master}: {summary.wall_s:.1f} s, {summary.rows_per_s:.1f} rows/s {json.dumps(figures)}", flush=True)
    session = spark_session(args.masters.split(",")[-1], "bench-replay")
    replayed = replay(session, ReplayOptions(traces=str(work / "traces.jsonl"), out=work / "replay",
                                             time_limit_ms=args.time_limit_ms), say=print)  # fmt: skip
    session.stop()
    steps = pq.read_table(work / "replay" / "steps").to_pandas()
    print(f"replay: {replayed.wall_s:.1f} s, {replayed.steps} rebalances", flush=True)
    if not args.quick:
        write_section("PySpark pipeline", report(args, plans, replayed.wall_s, replayed.steps, steps, stats))
    print(f"outputs kept in {work}")


def report(
    args: argparse.Namespace,
    plans: list[tuple[str, float, dict[str, float]]],
    replay_s: float,
    rebalances: int,
    steps: pd.DataFrame,
    last_stats: pd.DataFrame | None = None,
) -> str:
    lines = [
        f"`python -m bench.pipeline`: {args.groups:,} generated groups (seed 7: ~85% consumer groups of 2-2,000 "
        f"members and 1-500 topics, equal and unequal subscriptions, joins; ~15% Streams apps with standbys), "
        f"planned in the executors with the in-process solver, {args.time_limit_ms} ms limit per group. "
        f"Targets: under {TARGET_S:.0f} s on `local[2]`, at least {TARGET_SPEEDUP}x over `local[1]`.",
        "",
        "| master | wall time | groups/s | solved | rejected | proven optimal | fallbacks | solver time (sum) "
        "| p99 group | slowest group |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for master, wall, f in plans:
        lines.append(
            f"| `{master}` | {wall:.1f} s | {f['rows'] / wall:.1f} | {f['solved']:,} | {f['rejected']} | "
            f"{f['optimal']:,} | {f['fallbacks']} | {f['solve_s']:.0f} s | {f['p99_ms']:.0f} ms | "
            f"{f['max_ms']:.0f} ms |"
        )
    if len(plans) >= 2:
        speedup = plans[0][1] / plans[-1][1]
        last = plans[-1][1]
        lines += ["", f"Speed-up `{plans[-1][0]}` over `{plans[0][0]}`: **{speedup:.2f}x** "
                  f"(target {TARGET_SPEEDUP}x: {'met' if speedup >= TARGET_SPEEDUP else 'missed'}); "
                  f"`{plans[-1][0]}` wall time {last:.0f} s (target {TARGET_S:.0f} s: "
                  f"{'met' if last <= TARGET_S else 'missed'})."]  # fmt: skip
    if last_stats is not None:
        causes = last_stats["warnings"][last_stats["fallback"]].str.extract(r"heuristic: (.*?)(?:;|$)")[0]
        lines += ["", f"Why groups fell back on `{plans[-1][0]}` (each answered validly by the heuristic):", "",
                  "| cause | groups |", "|---|---:|"]  # fmt: skip
        lines += [f"| {cause} | {count} |" for cause, count in causes.value_counts().items()]
    by = steps.groupby("strategy", sort=False).agg(
        moves=("moves", "sum"), revoked=("revoked", "sum"), mean_balance=("balance", "mean"),
        mean_ms=("time_ms", "mean"),
    )  # fmt: skip
    slow = steps[(steps["strategy"] == "optimal") & (steps["time_ms"] > 0.75 * args.time_limit_ms)]
    lines += [
        "",
        f"Replay: {args.traces:,} traces x {args.events} events x 5 strategies = {rebalances:,} rebalances in "
        f"{replay_s:.0f} s on `{plans[-1][0] if plans else 'local[2]'}`.",
        "",
        "| strategy | partitions moved | partitions revoked | mean balance (max - min) | mean solve |",
        "|---|---:|---:|---:|---:|",
    ]
    for strategy, row in by.iterrows():
        lines.append(
            f"| {strategy} | {int(row['moves']):,} | {int(row['revoked']):,} | {row['mean_balance']:.2f} | "
            f"{row['mean_ms']:.1f} ms |"
        )
    share = slow["time_ms"].sum() / max(1.0, steps[steps["strategy"] == "optimal"]["time_ms"].sum())
    lines += ["", f"`optimal`: {len(slow)} rebalances (in {slow['trace_id'].nunique()} traces) ran into the time "
              f"limit and fell back; they are {share:.0%} of its solve time."]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
