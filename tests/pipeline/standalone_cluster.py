"""A Spark standalone cluster on 127.0.0.1 from the pyspark package alone: pyspark ships Spark's jars
and `bin/spark-class` but not `sbin/start-master.sh`, so the master and the workers are started as
`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`, each in a process group of
its own (a worker's executors are its children), on free ports, with small memory."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyspark

from stickyd.cli.child_service import free_port
from tests.processes import MARK, new_mark, wait_until_none_marked

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JAVA_TOOL_OPTIONS for JVMs that live a minute on a busy machine: the quick compiler alone and
one GC thread, rather than JIT and GC threads competing for the cores the jobs need."""


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str
    """spark://127.0.0.1:PORT, for `--master`."""
    ui_url: str
    """the master's web UI; `/json/` is its state (workers, running and completed applications)."""
    work_dirs: tuple[Path, ...]
    """one per worker: `app-.../N/` is where executor N of an application ran, with its stdout and stderr."""
    logs: Path
    """the folder of the master's and workers' logs."""

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = httpx.get(f"{self.ui_url}/json/", timeout=5).json()
        return state

    def wait_for_workers(self, timeout_s: float = 120.0) -> None:
        """Until every worker has registered with the master and is alive."""

        def all_alive() -> bool:
            return sum(w["state"] == "ALIVE" for w in self.state()["workers"]) == len(self.work_dirs)

        _wait(all_alive, [], self.logs, timeout_s, f"{len(self.work_dirs)} workers")


@contextmanager
def standalone_cluster(
    folder: Path, workers: int = 2, cores: int = 2, memory: str = "2g", startup_s: float = 120.0
) -> Iterator[StandaloneCluster]:
    """A master (alive) and `workers` workers of `cores` cores and `memory` each (started: they
    register within seconds, `wait_for_workers` waits for them). An application gets one core on
    each worker unless it asks for more (`spark.cores.max`), so with two cores per worker two jobs
    run side by side, each on every worker (an executor of 1 GB each). On the way out every process
    group is stopped, and no process of the cluster (JVMs, executors, their Python workers: all
    carry one environment mark) is left."""
    mark = new_mark()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",  # every socket and web UI on the loopback address
        "SPARK_DAEMON_MEMORY": "256m",  # the master's and workers' own heaps
        # no REST submission port (6066); an application's default cores: one per worker
        "SPARK_MASTER_OPTS": f"-Dspark.master.rest.enabled=false -Dspark.deploy.defaultCores={workers}",
        "SPARK_NO_DAEMONIZE": "1",
        "JAVA_TOOL_OPTIONS": SHORT_LIVED_JVM,  # the master, the workers and their executors
        MARK: mark,
    }
    port, ui_port = free_port(), free_port()
    cluster = StandaloneCluster(
        master_url=f"spark://127.0.0.1:{port}",
        ui_url=f"http://127.0.0.1:{ui_port}",
        work_dirs=tuple(folder / f"worker-{n}" for n in range(workers)),
        logs=folder,
    )
    started: list[subprocess.Popen[bytes]] = []

    def launch(name: str, main_class: str, *args: str) -> None:
        with (folder / f"{name}.log").open("wb") as log:
            started.append(
                subprocess.Popen(
                    [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            )

    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(ui_port))  # fmt: skip
        _wait(lambda: cluster.state().get("status") == "ALIVE", started, folder, startup_s, "the master")
        for n, work_dir in enumerate(cluster.work_dirs):
            work_dir.mkdir(parents=True, exist_ok=True)
            launch(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--webui-port", "0", "--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir),
                   cluster.master_url)  # fmt: skip
        yield cluster
    finally:
        for child in reversed(started):  # workers (and their executors) first, then the master
            _stop_group(child)
        left = wait_until_none_marked(mark, 10.0)
        assert left == {}, f"processes of the Spark cluster left behind: {left}"


def _wait(ready: Any, started: list[subprocess.Popen[bytes]], folder: Path, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in started:
            if child.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited with {child.returncode}: {_logs(folder)}")
        try:
            if ready():
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{what} not up within {timeout_s:.0f} s: {_logs(folder)}")


def _logs(folder: Path) -> str:
    return "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}" for log in sorted(folder.glob("*.log"))
    )


def _stop_group(child: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM to the child's process group, SIGKILL if it is not gone within grace_s."""
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    with suppress(ProcessLookupError):  # the group's other members (executors, Python workers) go with it
        os.killpg(child.pid, signal.SIGKILL)
