"""What `plan` and `replay` share: numbered rows turned into records in the executors, and the
records split into the good ones and the rejected rows (`errors/`, ordered by line number).

Every record carries `row` (the input's line number, or row number in Parquet), `ok`, and for a
rejected row `error_field`, `error_reason` and `raw`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from stickyd.pipeline.spark import to_pandas

ERROR_DETAIL = ("error_field", "error_reason", "raw")
"""Columns only a rejected row fills; dropped from the good rows' output."""


def records_per_row(
    frames: Iterator[pd.DataFrame], handle: Callable[[int, str], Iterable[dict[str, Any]]], columns: Sequence[str]
) -> Iterator[pd.DataFrame]:
    """`mapInPandas` body: each (row, value) of a frame through `handle`, its records as one frame."""
    for frame in frames:
        pairs = zip(frame["row"], frame["value"], strict=True)
        records = [record for row, value in pairs for record in handle(int(row), str(value))]
        yield pd.DataFrame.from_records(records, columns=list(columns))


@dataclass(frozen=True)
class Split:
    total: int
    """Records in all (good and rejected)."""
    good: DataFrame
    """The good records without `ok` and the error columns (persisted until `release`)."""
    errors: pd.DataFrame
    """The rejected rows, by row number: row, `key`, error_field, error_reason (also written)."""
    results: DataFrame

    def release(self) -> None:
        self.results.unpersist()

    def first_rejected(self, key: str, unit: str = "line", count: int = 3) -> tuple[str, ...]:
        """The first rejected rows in one line each: `line 26 (no group_id): group_id: required ...`."""
        head = self.errors.head(count)
        return tuple(
            f"{unit} {int(r['row'])} ({r[key] if isinstance(r[key], str) and r[key] else f'no {key}'}): "
            f"{r['error_field']}: {r['error_reason']}"
            for r in head.to_dict("records")
        )


def split_results(results: DataFrame, out: Path, key: Sequence[str]) -> Split:
    """Count the records, write the rejected rows to `out/errors` (JSON lines, by row number), and
    hand back the good ones. `key`: the columns that name what a row was (group_id, kind; trace_id)."""
    results = results.persist()
    total = results.count()
    out.mkdir(parents=True, exist_ok=True)
    errors = results.filter(~F.col("ok")).select("row", *key, *ERROR_DETAIL).orderBy("row")
    errors.coalesce(1).write.mode("overwrite").json(f"{out}/errors")
    good = results.filter(F.col("ok")).drop("ok", *ERROR_DETAIL)
    return Split(total, good, to_pandas(errors.drop("raw")), results)
