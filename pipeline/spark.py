"""The SparkSession the jobs run in: local mode by default, anything `spark-submit` gives otherwise."""

from __future__ import annotations

import os
import sys

import pandas as pd
from pyspark.sql import DataFrame, SparkSession


def spark_session(master: str | None = "local[*]", app_name: str = "stickyd-pipeline") -> SparkSession:
    """A session with Arrow on and the UI off; `master=None` keeps what spark-submit set.

    Executors run this interpreter (`PYSPARK_PYTHON`) unless the environment names another.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    session = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.pandas.convertToArrowArraySafely", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
        .config("spark.driver.memory", os.environ.get("STICKYD_SPARK_DRIVER_MEMORY", "2g"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel(os.environ.get("STICKYD_SPARK_LOG_LEVEL", "ERROR"))
    return session


def parallelism(session: SparkSession) -> int:
    return int(session.sparkContext.defaultParallelism)


def to_pandas(frame: DataFrame) -> pd.DataFrame:
    """`frame.toPandas()`, typed as pandas (pyspark's stubs say 'PandasDataFrameLike')."""
    local: pd.DataFrame = frame.toPandas()
    return local
