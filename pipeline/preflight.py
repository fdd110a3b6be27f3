"""Checks the pipeline's inputs before Spark starts (no pyspark here): a refusal takes a second,
not the JVM's start-up.

Each check raises `InputError` with one line naming the input and what is wrong with it. Inputs
given as URLs Spark resolves (hdfs://, s3a://) are left to Spark.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import httpx


class InputError(ValueError):
    """An input the job cannot read at all (missing, unknown format, wrong columns, no service)."""


class ServiceUnavailable(InputError):
    """`--service` was given but the service does not answer its health check."""


FORMATS = ("auto", "jsonl", "parquet")
FLEET_COLUMNS = ("group_id", "kind", "problem")
METRICS_COLUMNS = ("topic", "partition", "minute", "records", "bytes")
TRACE_COLUMNS = ("trace_id", "topics", "members", "copartitioned", "events")
SAMPLED_LINES = 100
"""JSON lines: the columns are those of the first this many non-empty lines."""


def is_local(path: str) -> bool:
    """A plain path (checked here) rather than a URL Spark resolves (hdfs://, s3a://, file://)."""
    return "://" not in path


def check_exists(path: str, name: str) -> None:
    if is_local(path) and not Path(path).exists():
        raise InputError(f"{name}: {path}: no such file or directory")


def input_format(path: str, fmt: str) -> str:
    """`auto`: Parquet for `*.parquet` or a folder of them, JSON lines otherwise."""
    if fmt not in FORMATS:
        raise InputError(f"--format: {fmt!r} is not {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    name = path.rstrip("/")
    if name.endswith(".parquet") or (is_local(name) and Path(name).is_dir() and any(Path(name).glob("*.parquet"))):
        return "parquet"
    return "jsonl"


def columns_of(path: str, fmt: str, name: str) -> set[str] | None:
    """The input's column names (None for a URL: Spark reads it). Parquet from its schema, JSON
    lines from the keys of the first `SAMPLED_LINES` objects; a line that is not a JSON object is
    named with its number."""
    if not is_local(path):
        return None
    if input_format(path, fmt) == "parquet":
        import pyarrow.parquet  # its schema reader; pyarrow.dataset takes seconds to import

        files = sorted(Path(path).glob("*.parquet")) if Path(path).is_dir() else [Path(path)]
        if not files:
            raise InputError(f"{name}: {path}: a folder without .parquet files")
        try:
            return set(pyarrow.parquet.read_schema(files[0]).names)
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"{name}: {path}: not readable as Parquet ({error})") from None
    columns: set[str] = set()
    for number, line in _first_lines(_json_files(Path(path))):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{name}: {path}: line {number}: not valid JSON ({error.msg})") from None
        if not isinstance(value, dict):
            raise InputError(f"{name}: {path}: line {number}: expected a JSON object, got {type(value).__name__}")
        columns |= set(value)
    return columns


def check_columns(path: str, fmt: str, name: str, needed: tuple[str, ...]) -> None:
    """Refuse an input that lacks any of `needed`, naming the missing columns and the ones found."""
    check_exists(path, name)
    found = columns_of(path, fmt, name)
    if found is None:
        return
    if missing := [c for c in needed if c not in found]:
        have = ", ".join(sorted(found)) or "none"
        raise InputError(
            f"{name}: {path}: missing column(s) {', '.join(missing)} (need {', '.join(needed)}; it has {have})"
        )


def check_service(url: str, timeout_s: float = 5.0) -> None:
    """`--service`: the service answers its health check, or the job is refused before Spark starts."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/v1/health", timeout=timeout_s)
    except httpx.HTTPError as error:
        reason = f"{type(error).__name__}: {error}"
        raise ServiceUnavailable(f"--service {url}: no answer from /v1/health ({reason})") from None
    if response.status_code != 200:
        raise ServiceUnavailable(f"--service {url}: /v1/health answered {response.status_code}, not 200")


def check_java() -> None:
    """Spark needs a Java runtime (17): on PATH or under JAVA_HOME."""
    home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (home and (Path(home) / "bin" / "java").exists()):
        raise InputError("the pipeline needs Java 17 (no `java` on PATH, no JAVA_HOME): apt-get install openjdk-17-jre")


def _json_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    return [path]


def _first_lines(files: Iterable[Path]) -> Iterable[tuple[int, str]]:
    taken = 0
    for file in files:
        with file.open(encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield number, line
                    taken += 1
                    if taken >= SAMPLED_LINES:
                        return


def check_rows_input(path: str, fmt: str, name: str, needed: tuple[str, ...]) -> None:
    """A fleet snapshot or traces file: there, and (Parquet) with its columns. A JSON-lines row
    without them is one rejected row, reported with its line number, not a refusal of the file."""
    check_exists(path, name)
    if input_format(path, fmt) == "parquet":
        check_columns(path, fmt, name, needed)


def check_plan_inputs(snapshot: str, fmt: str, metrics: str | None, service: str | None) -> None:
    """Everything `plan` can refuse before Spark starts: the snapshot, the metrics' columns (any
    format), and the service's health."""
    check_rows_input(snapshot, fmt, "snapshot", FLEET_COLUMNS)
    if metrics is not None:
        check_columns(metrics, "auto", "--metrics", METRICS_COLUMNS)
    if service is not None:
        check_service(service)
