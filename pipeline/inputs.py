"""Reading the pipeline's inputs into Spark: fleet snapshots and traces as numbered JSON rows.

What can be checked without Spark (the file is there, its columns) is checked first by
`stickyd.pipeline.preflight`; the checks here cover what only Spark reads (hdfs://, s3a:// inputs).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from stickyd.pipeline.preflight import METRICS_COLUMNS, InputError, check_exists, input_format


def read_rows(
    spark: SparkSession, path: str, fmt: str = "auto", columns: tuple[str, ...] = (), name: str = "input"
) -> DataFrame:
    """(row, value): each input row as one JSON text, numbered from 1 in file order.

    JSON lines are read as text, so a malformed line reaches the solver step and is reported
    with its number (the line number: blank lines are numbered, then skipped) instead of being
    dropped by a JSON reader. A Parquet row is turned into the same JSON text from `columns`.
    """
    check_exists(path, name)
    fmt = input_format(path, fmt)
    if fmt == "parquet":
        frame = spark.read.parquet(path)
        _require(frame, path, name, columns)
        text = frame.select(F.to_json(F.struct(*columns)).alias("value"))
    else:
        text = spark.read.text(path)
    numbered = text.rdd.zipWithIndex().map(lambda pair: (pair[1] + 1, pair[0][0]))
    rows = spark.createDataFrame(numbered, "row long, value string")
    return rows.filter(F.trim(F.col("value")) != "")


def read_metrics(spark: SparkSession, path: str, fmt: str = "auto") -> DataFrame:
    """Per-minute partition traffic; refused (InputError naming the columns) without them."""
    check_exists(path, "--metrics")
    if input_format(path, fmt) == "parquet":
        frame = spark.read.parquet(path)
    else:
        frame = spark.read.option("mode", "FAILFAST").json(path)
    _require(frame, path, "--metrics", METRICS_COLUMNS)
    return frame


def _require(frame: DataFrame, path: str, name: str, columns: tuple[str, ...]) -> None:
    if missing := [c for c in columns if c not in frame.columns]:
        have = ", ".join(sorted(frame.columns)) or "none"
        raise InputError(
            f"{name}: {path}: missing column(s) {', '.join(missing)} (need {', '.join(columns)}; it has {have})"
        )
