"""Solving fleet rows: in an executor with the in-process solver, or in the driver over HTTP."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from stickyd.client.http import StickydClient, StickydError
from stickyd.models import ConsumerProblem
from stickyd.pipeline.outcomes import records_per_row
from stickyd.pipeline.preflight import ServiceUnavailable
from stickyd.pipeline.rows import FleetRow, Result, RowError, Shape, consumer_result, parse_row, streams_result
from stickyd.solvers import solve_consumer, solve_streams

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

RESULT_FIELDS = tuple(Result.__dataclass_fields__)
__all__ = ["RESULT_FIELDS", "ServiceUnavailable", "solve_frames", "solve_line", "solve_over_http"]


def solve_line(row: int, raw: str, time_limit_ms: int | None, shape: Shape | None = None) -> Result:
    """Parse and solve one fleet row in this process; a bad row becomes an error result."""
    try:
        fleet_row = parse_row(row, raw, time_limit_ms, shape)
    except RowError as error:
        return error.result()
    try:
        problem = fleet_row.problem
        if isinstance(problem, ConsumerProblem):
            return consumer_result(fleet_row, solve_consumer(problem))
        return streams_result(fleet_row, solve_streams(problem))
    except Exception as error:  # one group's failure must not lose the rest of the fleet
        log.exception("group %s failed", fleet_row.group_id)
        return RowError(row, fleet_row.group_id, fleet_row.kind, "problem", f"solver failed: {error}", raw).result()


def solve_frames(
    frames: Iterator[pd.DataFrame], time_limit_ms: int | None, shape: Shape | None = None
) -> Iterator[pd.DataFrame]:
    """`mapInPandas` body: (row, value) frames in, RESULT_SCHEMA frames out."""
    return records_per_row(
        frames, lambda row, raw: [solve_line(row, raw, time_limit_ms, shape).record()], RESULT_FIELDS
    )


def solve_over_http(
    lines: Iterable[tuple[int, str]],
    url: str,
    time_limit_ms: int | None,
    *,
    concurrency: int = 4,
    batch_size: int = 64,
    timeout_s: float = 120.0,
    progress: Callable[[int], None] | None = None,
    shape: Shape | None = None,
) -> Iterator[Result]:
    """The driver asks a running `stickyd serve` for every row, `batch_size` rows at a time.

    Rows are checked locally first (same errors as in-process); the service's own 4xx answers
    become error results naming its field. Raises ServiceUnavailable if the service is down.
    """
    clients = [StickydClient(url, timeout=timeout_s) for _ in range(concurrency)]
    try:
        try:
            clients[0].health()
        except Exception as error:
            raise ServiceUnavailable(f"--service {url}: no answer from /v1/health ({error})") from None
        with ThreadPoolExecutor(max_workers=concurrency) as executor:
            batch: list[tuple[int, str]] = []
            for item in lines:
                batch.append(item)
                if len(batch) >= batch_size:
                    yield from _http_batch(executor, clients, batch, time_limit_ms, progress, shape)
                    batch = []
            if batch:
                yield from _http_batch(executor, clients, batch, time_limit_ms, progress, shape)
    finally:
        for client in clients:
            client.close()


def _http_batch(
    executor: ThreadPoolExecutor,
    clients: list[StickydClient],
    batch: list[tuple[int, str]],
    time_limit_ms: int | None,
    progress: Callable[[int], None] | None,
    shape: Shape | None,
) -> list[Result]:
    jobs = [
        executor.submit(_ask_service, clients[i % len(clients)], row, raw, time_limit_ms, shape)
        for i, (row, raw) in enumerate(batch)
    ]
    results = [job.result() for job in jobs]
    if progress is not None:
        progress(len(results))
    return results


def _ask_service(client: StickydClient, row: int, raw: str, time_limit_ms: int | None, shape: Shape | None) -> Result:
    try:
        fleet_row = parse_row(row, raw, time_limit_ms, shape)
    except RowError as error:
        return error.result()
    try:
        return _service_result(client, fleet_row)
    except StickydError as error:
        field = f"problem.{error.field}" if error.field else "problem"
        return RowError(row, fleet_row.group_id, fleet_row.kind, field, f"service: {error.detail}", raw).result()
    except Exception as error:
        reason = f"service unreachable: {type(error).__name__}: {error}"
        return RowError(row, fleet_row.group_id, fleet_row.kind, "problem", reason, raw).result()


def _service_result(client: StickydClient, fleet_row: FleetRow) -> Result:
    problem = fleet_row.problem
    if isinstance(problem, ConsumerProblem):
        return consumer_result(fleet_row, client.assign_consumer(problem))
    return streams_result(fleet_row, client.assign_streams(problem))
