"""Reading the pipeline's inputs into Spark: fleet snapshots and traces as numbered JSON rows."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


class InputError(ValueError):
    """An input the job cannot read at all (missing, unknown format, wrong columns)."""


def is_local(path: str) -> bool:
    """A plain path (checked here) rather than a URL Spark resolves (hdfs://, s3a://, file://)."""
    return "://" not in path


def check_exists(path: str) -> None:
    if is_local(path) and not Path(path).exists():
        raise InputError(f"{path}: no such file or directory")


def input_format(path: str, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    name = path.rstrip("/")
    if name.endswith(".parquet") or (Path(name).is_dir() and any(Path(name).glob("*.parquet"))):
        return "parquet"
    return "jsonl"


def read_rows(spark: SparkSession, path: str, fmt: str = "auto", columns: tuple[str, ...] = ()) -> DataFrame:
    """(row, value): each input row as one JSON text, numbered from 1 in file order.

    JSON lines are read as text, so a malformed line reaches the solver step and is reported
    with its number instead of being dropped by a JSON reader. A Parquet row is turned into
    the same JSON text from `columns`.
    """
    check_exists(path)
    fmt = input_format(path, fmt)
    if fmt == "parquet":
        frame = spark.read.parquet(path)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(columns)})")
        text = frame.select(F.to_json(F.struct(*columns)).alias("value"))
    elif fmt == "jsonl":
        text = spark.read.text(path)
    else:
        raise InputError(f"--format: {fmt!r} is not auto, jsonl or parquet")
    numbered = text.rdd.zipWithIndex().map(lambda pair: (pair[1] + 1, pair[0][0]))
    rows = spark.createDataFrame(numbered, "row long, value string")
    return rows.filter(F.trim(F.col("value")) != "")


def read_metrics(spark: SparkSession, path: str, fmt: str = "auto") -> DataFrame:
    check_exists(path)
    fmt = input_format(path, fmt)
    if fmt == "parquet":
        return spark.read.parquet(path)
    schema = "topic string, partition long, minute timestamp, records long, bytes long"
    return spark.read.schema(schema).option("mode", "FAILFAST").json(path)
