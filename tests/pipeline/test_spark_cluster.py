"""`stickyd pipeline plan` and `replay` submitted to a real Spark standalone cluster (a master and
two workers on 127.0.0.1): the same answers as local mode, and the work really ran in the
workers' executors. The executors get stickyd both ways docs/pipeline.md ("On a cluster") names:
for `plan`, a Python that has it installed (`PYSPARK_PYTHON`: this environment); for `replay`, a
Python with the dependencies alone and the project's wheel shipped with the job (`--py-files`).

Both jobs are submitted at once as the module starts and run side by side, each with an executor
on each worker, while the same inputs are planned and replayed in local mode in this process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from stickyd.cli.child_service import ServiceProcess
from stickyd.pipeline.churn.replay import ReplayOptions, replay
from stickyd.pipeline.generate import FleetShape, fleet_rows
from stickyd.pipeline.plan import PlanOptions, plan
from tests.packaging import build_wheel, env_with_dependencies_only
from tests.pipeline.conftest import BAD_ROWS, contract_rows
from tests.pipeline.standalone_cluster import SHORT_LIVED_JVM, StandaloneCluster, standalone_cluster
from tests.pipeline.test_replay import HAND_TRACE
from tests.processes import MARK, new_mark, wait_until_none_marked

STATS = ["group_id", "kind", "strategy", "solver", "optimal", "fallback", "moves", "standby_moves", "owned",
         "members", "partitions", "min_load", "max_load", "balance", "limited_by"]  # fmt: skip
ASSIGNMENT_KEYS = ["group_id", "member", "topic", "partition", "role"]
STEP_KEYS = ["trace_id", "strategy", "step"]
TIME_LIMIT_MS = 10_000


@dataclass
class ClusterRun:
    """One `stickyd pipeline ...` driver process submitted to the cluster."""

    out: Path
    process: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.monotonic)
    took_s: float | None = None

    def finished(self, timeout_s: float = 300.0) -> str:
        """Its stderr, once it has exited 0."""
        while self.process.poll() is None:  # polled, to measure how long the job took
            assert time.monotonic() - self.started < timeout_s, f"{self.out.name} still running"
            time.sleep(0.2)
        if self.took_s is None:
            self.took_s = time.monotonic() - self.started
            print(f"\n{self.out.name} on the cluster: {self.took_s:.0f} s (or less) from submission to exit")
        stderr = self.log.read_text()
        assert self.process.returncode == 0, stderr[-3000:]
        return stderr


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fleet (12 generated groups, the contract's examples, the malformed rows: every kind of row
    of the local-mode tests' fleet, small enough that solving does not dominate) and churn traces
    (the hand-computed one, a longer one, a trace naming a member that is not there, bad JSON)."""
    folder = tmp_path_factory.mktemp("inputs")
    lines = [json.dumps(row) for row in [*fleet_rows(5, FleetShape(groups=12, max_members=20, max_topics=5)),
                                         *contract_rows()]]  # fmt: skip
    lines[3:3] = [raw for raw, _ in BAD_ROWS]
    (folder / "fleet.jsonl").write_text("\n".join(lines) + "\n")
    longer = {**HAND_TRACE, "trace_id": "longer", "topics": {"t": 5},
              "events": [*HAND_TRACE["events"], {"type": "leave", "member_ids": ["b"]}]}  # fmt: skip
    broken = {**HAND_TRACE, "trace_id": "broken", "events": [{"type": "leave", "member_ids": ["nobody"]}]}
    traces = [json.dumps(HAND_TRACE), json.dumps(broken), json.dumps(longer), "{oops"]
    (folder / "traces.jsonl").write_text("\n".join(traces) + "\n")
    return folder / "fleet.jsonl", folder / "traces.jsonl"


@dataclass(frozen=True)
class ShippedCode:
    python: Path
    """an executor Python with stickyd's dependencies but not stickyd"""
    archive: Path
    """the project's wheel under a .zip name: PySpark puts the --py-files named .zip, .egg or .jar
    on the executors' path (a wheel is a zip archive of the packages)"""


def shipped_code(folder: Path) -> ShippedCode:
    wheel = build_wheel(folder / "source", folder / "dist")
    archive = wheel.with_suffix(".zip")
    archive.write_bytes(wheel.read_bytes())
    python = env_with_dependencies_only(folder / "executor-env")
    # run from elsewhere than the checkout's root, whose stickyd/ `python -c` would find first
    alone = subprocess.run([str(python), "-c", "import stickyd"], capture_output=True, text=True, timeout=60,
                           cwd=folder)  # fmt: skip
    assert alone.returncode != 0 and "No module named 'stickyd'" in alone.stderr
    return ShippedCode(python, archive)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def cluster_runs(
    cluster: StandaloneCluster,
    service: ServiceProcess,
    inputs: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, ClusterRun]]:
    """`plan --service` and `replay`, both submitted to the cluster; stopped (their process groups:
    the CLI and its driver JVM) if a test leaves before they finish."""
    fleet, traces = inputs
    folder = tmp_path_factory.mktemp("cluster-out")
    started = time.monotonic()
    shipped = shipped_code(tmp_path_factory.mktemp("shipped"))  # while the workers register
    cluster.wait_for_workers()
    print(f"\nSpark standalone cluster: 2 workers alive after {time.monotonic() - started:.1f} s more")
    master = ["--master", cluster.master_url]
    commands = {
        "plan": ["plan", str(fleet), "--service", service.url, "--time-limit-ms", str(TIME_LIMIT_MS), *master],
        "replay": ["replay", str(traces), *master],
    }
    mark = new_mark()  # the CLIs, their driver JVMs and whatever those start
    common = {**os.environ, MARK: mark, "STICKYD_SPARK_DRIVER_MEMORY": "1g", "JAVA_TOOL_OPTIONS": SHORT_LIVED_JVM}
    envs = {
        "plan": {**common, "PYSPARK_PYTHON": sys.executable},
        "replay": {**common, "PYSPARK_PYTHON": str(shipped.python),
                   "PYSPARK_SUBMIT_ARGS": f"--py-files {shipped.archive} pyspark-shell"},
    }  # fmt: skip
    runs: dict[str, ClusterRun] = {}
    try:
        for name, args in commands.items():
            log = folder / f"{name}.stderr"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    [sys.executable, "-m", "stickyd.cli", "pipeline", *args, "--out", str(folder / name)],
                    env=envs[name], stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True,
                )  # fmt: skip
            runs[name] = ClusterRun(folder / name, process, log)
        yield runs
    finally:
        for run in runs.values():
            if run.process.poll() is None:
                os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()
        left = wait_until_none_marked(mark, 10.0)
        assert left == {}, f"processes of the cluster's drivers left behind: {left}"


def parquet(folder: Path, keys: list[str]) -> pd.DataFrame:
    return pd.read_parquet(folder).sort_values(keys).reset_index(drop=True)


def errors(folder: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for f in folder.glob("*.json") for line in f.read_text().splitlines()]
    return sorted(lines, key=lambda e: int(str(e["row"])))


def test_plan_on_the_cluster_through_the_service_equals_local_mode(
    cluster_runs: dict[str, ClusterRun], service: ServiceProcess, inputs: tuple[Path, Path],
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:  # fmt: skip
    """The driver fetches every assignment from a running `stickyd serve`; the executors parse the
    snapshot and write the outputs. Stats, assignments and rejected rows are local mode's."""
    spark: SparkSession = request.getfixturevalue("spark")  # starts while the cluster works
    plan(spark, PlanOptions(snapshot=str(inputs[0]), out=tmp_path, service=service.url, time_limit_ms=TIME_LIMIT_MS))
    run = cluster_runs["plan"]
    stderr = run.finished()
    assert f"{12 + len(contract_rows())} groups planned, 5 rows rejected" in stderr
    pd.testing.assert_frame_equal(parquet(run.out / "stats", ["group_id"])[STATS],
                                  parquet(tmp_path / "stats", ["group_id"])[STATS])  # fmt: skip
    pd.testing.assert_frame_equal(
        parquet(run.out / "assignments", ASSIGNMENT_KEYS), parquet(tmp_path / "assignments", ASSIGNMENT_KEYS)
    )
    assert errors(run.out / "errors") == errors(tmp_path / "errors") and len(errors(tmp_path / "errors")) == 5


def test_replay_on_the_cluster_equals_local_mode(
    cluster_runs: dict[str, ClusterRun], inputs: tuple[Path, Path], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Every strategy replays each trace in the executors, whose Python imports stickyd only from
    the wheel shipped with the job, as in local mode: the same moves, balance and revocations at
    every step, the same rejected traces."""
    spark: SparkSession = request.getfixturevalue("spark")
    replay(spark, ReplayOptions(traces=str(inputs[1]), out=tmp_path))
    run = cluster_runs["replay"]
    stderr = run.finished()
    assert "2 traces, 45 rebalances, 2 rejected" in stderr
    steps, want = parquet(run.out / "steps", STEP_KEYS), parquet(tmp_path / "steps", STEP_KEYS)
    assert len(steps) == 45
    pd.testing.assert_frame_equal(steps.drop(columns="time_ms"), want.drop(columns="time_ms"))
    assert errors(run.out / "errors") == errors(tmp_path / "errors")


def test_both_jobs_ran_on_the_cluster_in_both_workers(
    cluster: StandaloneCluster, cluster_runs: dict[str, ClusterRun]
) -> None:
    """Each CLI says it ran on the cluster's master; the master lists both applications finished,
    and each worker ran an executor of each."""
    for run in cluster_runs.values():
        assert f"on {cluster.master_url}" in run.finished()
    finished = cluster.state()["completedapps"]
    assert [app["state"] for app in finished] == ["FINISHED", "FINISHED"], finished
    for app in finished:
        for work_dir in cluster.work_dirs:
            assert list((work_dir / app["id"]).iterdir()), f"no executor of {app['id']} in {work_dir}"
