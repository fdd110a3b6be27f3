"""Partition traffic: per-minute metrics aggregated into rates, and each member's share of them."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def partition_rates(metrics: DataFrame) -> DataFrame:
    """(topic, partition, records_per_s, bytes_per_s) over the whole metrics window.

    The window runs from the first minute to the end of the last one, so a partition silent
    for part of it gets a proportionally lower rate.
    """
    timed = metrics.select(
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("long").alias("partition"),
        F.col("minute").cast("timestamp").cast("long").alias("second"),
        F.col("records").cast("double").alias("records"),
        F.col("bytes").cast("double").alias("bytes"),
    )
    window = timed.agg((F.max("second") - F.min("second") + F.lit(60)).alias("seconds"))
    totals = timed.groupBy("topic", "partition").agg(F.sum("records").alias("records"), F.sum("bytes").alias("bytes"))
    return totals.crossJoin(window).select(
        "topic",
        "partition",
        (F.col("records") / F.col("seconds")).alias("records_per_s"),
        (F.col("bytes") / F.col("seconds")).alias("bytes_per_s"),
    )


def member_traffic(assignments: DataFrame, stats: DataFrame, rates: DataFrame) -> DataFrame:
    """Per consumer-group member: partitions, rates, and its share of the group's bytes.

    `skew` is the share times the number of members: 1.0 is a fair share, 2.0 twice that.
    Partitions without metrics count as silent. Streams apps are left out (their tasks are
    named by subtopology, not topic).
    """
    consumers = stats.filter(F.col("kind") == "consumer").select("group_id", "members")
    owned = (
        assignments.filter(F.col("role") == "active")
        .join(consumers, "group_id")
        .join(rates, ["topic", "partition"], "left")
        .groupBy("group_id", "member", "members")
        .agg(
            F.count("*").alias("partitions"),
            F.coalesce(F.sum("records_per_s"), F.lit(0.0)).alias("records_per_s"),
            F.coalesce(F.sum("bytes_per_s"), F.lit(0.0)).alias("bytes_per_s"),
        )
    )
    group_bytes = F.sum("bytes_per_s").over(Window.partitionBy("group_id"))
    share = F.when(group_bytes > 0, F.col("bytes_per_s") / group_bytes).otherwise(F.lit(None).cast("double"))
    return owned.withColumn("share", share).withColumn("skew", F.col("share") * F.col("members")).drop("members")
