"""The SparkSession the jobs run in: local mode by default, anything `spark-submit` gives otherwise.

Spark's own log is quiet by default: one log4j2 level for every Spark logger (`ERROR` unless
`log_level` says otherwise, `pipeline/log4j2.properties`), the driver bound to the loopback
address (no "resolves to a loopback address" warning), no console progress bar (the CLI prints
its own progress), and, with `log_file`, everything the JVM writes (its log, its own warnings,
the Python workers' stderr) goes to that file instead of the terminal.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession

LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
LOG4J2_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"


def spark_conf(master: str | None, app_name: str, log_level: str) -> SparkConf:
    """Arrow on, UI and progress bar off, Spark's log at `log_level`; `master=None` keeps spark-submit's."""
    conf = SparkConf().setAppName(app_name)
    if master is not None:
        conf = conf.setMaster(master)
    java_options = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} -Dstickyd.spark.log.level={log_level}"
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_options,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.pandas.convertToArrowArraySafely": "true",
        "spark.python.worker.reuse": "true",
        "spark.sql.shuffle.partitions": str(2 * (os.cpu_count() or 2)),
        "spark.driver.memory": os.environ.get("STICKYD_SPARK_DRIVER_MEMORY", "2g"),
    }
    for key, value in settings.items():
        if not conf.contains(key):  # what spark-submit was given wins
            conf = conf.set(key, value)
    return conf


def spark_session(
    master: str | None = "local[*]",
    app_name: str = "stickyd-pipeline",
    *,
    log_level: str = "ERROR",
    log_file: Path | None = None,
) -> SparkSession:
    """A session with Arrow on and the UI off; `master=None` keeps what spark-submit set.

    Executors run this interpreter (`PYSPARK_PYTHON`) unless the environment names another.
    `log_file`: where the JVM's output goes when this call starts the JVM (None: stderr).
    """
    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"--spark-log-level: {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, and no hostname warning
    conf = spark_conf(master, app_name, level)
    if SparkContext._gateway is None and log_file is not None:  # this call starts the JVM
        from pyspark.java_gateway import launch_gateway

        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("ab") as sink:  # the JVM keeps its own descriptor
            gateway = launch_gateway(conf, popen_kwargs={"stdout": sink, "stderr": sink})
        SparkContext(conf=conf, gateway=gateway)
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    session.sparkContext.setLogLevel(level)
    return session


def parallelism(session: SparkSession) -> int:
    return int(session.sparkContext.defaultParallelism)


def to_pandas(frame: DataFrame) -> pd.DataFrame:
    """`frame.toPandas()`, typed as pandas (pyspark's stubs say 'PandasDataFrameLike')."""
    local: pd.DataFrame = frame.toPandas()
    return local


TaskProgress = Callable[[int, int], None]
"""Called with (tasks done, tasks in all) of the running Spark stages whenever that changes."""


@contextmanager
def watching_tasks(session: SparkSession, report: TaskProgress, every_s: float = 0.5) -> Iterator[None]:
    """Poll Spark's status tracker in a thread while the block runs; `report` gets the task counts."""
    tracker = session.sparkContext.statusTracker()
    stop = threading.Event()

    def poll() -> None:
        last = (-1, -1)
        while not stop.wait(every_s):
            stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            counts = (
                sum(s.numCompletedTasks for s in stages if s is not None),
                sum(s.numTasks for s in stages if s is not None),
            )
            if counts != last and counts[1] > 0:
                last = counts
                report(*counts)

    watcher = threading.Thread(target=poll, name="stickyd-spark-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
