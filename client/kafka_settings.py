"""Kafka client settings as Kafka's own tools take them: bootstrap servers, a `.properties` file
(`--command-config`), then NAME=VALUE pairs, later ones winning. `stickyd snapshot` and the
service's cluster watcher (STICKYD_WATCH_*) read them the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path


class SettingsError(ValueError):
    """A settings file that cannot be read or a line that is not NAME=VALUE; the message says where."""


def kafka_settings(
    bootstrap_servers: str,
    properties_file: Path | None = None,
    pairs: Iterable[str] = (),
    given: Mapping[str, str] | None = None,
    pairs_name: str = "--config",
) -> dict[str, str]:
    """`bootstrap.servers`, then the file's settings, then `pairs` (NAME=VALUE), then `given`."""
    settings = {"bootstrap.servers": bootstrap_servers}
    lines: list[tuple[str, str]] = []
    if properties_file is not None:
        try:
            text = properties_file.read_text()
        except OSError as error:
            raise SettingsError(f"{properties_file}: cannot read ({error.strerror})") from None
        lines += [(f"{properties_file}:{n}", line.strip()) for n, line in enumerate(text.splitlines(), 1)]
    lines += [(pairs_name, item) for item in pairs]
    for where, line in lines:
        if not line or line.startswith(("#", "!")):
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise SettingsError(f"{where}: expected NAME=VALUE, got {line!r}")
        settings[name.strip()] = value.strip()
    settings.update({str(k): str(v) for k, v in (given or {}).items()})
    return settings
