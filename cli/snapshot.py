"""`stickyd snapshot`: a live cluster's consumer groups as a fleet snapshot for `stickyd pipeline plan`."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from stickyd.solvers.time_policy import SNAPSHOT_RATE_WINDOW_S

console = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> NoReturn:
    typer.echo(f"stickyd: {message}", err=True)
    raise typer.Exit(code=2)


def _settings(bootstrap_server: str, config: list[str], command_config: Path | None) -> dict[str, str]:
    """Kafka settings from --command-config (a .properties file) then --config NAME=VALUE."""
    from stickyd.client.kafka_settings import SettingsError, kafka_settings

    try:
        return kafka_settings(bootstrap_server, command_config, config)
    except SettingsError as error:
        where = "" if str(error).startswith("--config") else "--command-config: "
        _fail(f"{where}{error}")


def snapshot(
    bootstrap_server: Annotated[str, typer.Option(help="Kafka's bootstrap.servers, e.g. broker1:9092,broker2:9092")],
    out: Annotated[Path, typer.Option(help="folder for fleet.jsonl, lag.jsonl and groups.jsonl")] = Path("snapshot"),
    group: Annotated[list[str] | None, typer.Option(help="only this consumer group (repeat); default: all")] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(help="a Kafka client setting NAME=VALUE (repeat), e.g. security.protocol=SASL_SSL"),
    ] = None,
    command_config: Annotated[
        Path | None, typer.Option(help="a .properties file of Kafka client settings (as Kafka's tools take)")
    ] = None,
    timeout_s: Annotated[float, typer.Option(min=1, help="per Admin API request")] = 30.0,
    rate_window_s: Annotated[
        float, typer.Option(min=0, help="seconds between two readings of the end offsets, for rates; 0: no rates")
    ] = SNAPSHOT_RATE_WINDOW_S,
) -> None:
    """Read every consumer group (classic and KIP-848) of a live cluster through the Admin API and
    write a fleet snapshot `stickyd pipeline plan` reads, with each group's lag and each partition's
    produce rate (records/s) measured over --rate-window-s."""
    if importlib.util.find_spec("confluent_kafka") is None or importlib.util.find_spec("kafka") is None:
        _fail("stickyd snapshot needs confluent-kafka and kafka-python: pip install 'stickyd[kafka]'")
    from stickyd.client.cluster_reader import ClusterError, measure_rates, read_cluster
    from stickyd.client.snapshot import lag_rows, write_snapshot

    settings = _settings(bootstrap_server, config or [], command_config)
    try:
        with console.status(f"reading consumer groups from {bootstrap_server}"):
            state = read_cluster(settings, group or (), timeout_s)
        if rate_window_s > 0:
            with console.status(f"measuring produce rates over {rate_window_s:g} s"):
                measure_rates(settings, state, rate_window_s, timeout_s)
    except ClusterError as error:
        _fail(str(error))
    paths = write_snapshot(state, out)
    lags = [r["lag"] for r in lag_rows(state) if r["lag"] is not None]
    members = sum(len(g.members) for g in state.groups)
    rates = [r for r in state.rates.values() if r is not None]
    if state.rate_window_s is not None:
        console.print(f"produce rates of {len(rates)} partitions over {state.rate_window_s:.1f} s (total "
                      f"{sum(rates):.1f} records/s) -> {paths['lag']}")  # fmt: skip
    console.print(
        f"{len(state.groups)} groups ({members} members, {len(state.partitions)} topics) -> {paths['fleet']}; "
        f"lag of {len(lags)} committed partitions (total {sum(lags)}) -> {paths['lag']}"
    )
    for reason in state.skipped:
        console.print(f"skipped {reason}")
    console.print(f"next: stickyd pipeline plan {paths['fleet']} --out plan-out")
