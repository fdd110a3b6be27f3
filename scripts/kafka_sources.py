"""What the scripts that run Apache Kafka's own unit tests against stickyd's plug-ins fetch: a file of
Kafka's source tree at a tag, and a jar from Maven Central into the local Maven repository."""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from pathlib import Path


def kafka_file(path: str, tag: str) -> str | None:
    """The text of `path` in apache/kafka at `tag`, or None when the tag has no such file."""
    url = f"https://raw.githubusercontent.com/apache/kafka/{tag}/{path}"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (a fixed https address)
            text: str = response.read().decode()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    return text


def maven_jar(coordinate: str, file_name: str | None = None) -> Path:
    """The jar of `group:artifact:version` in the local Maven repository, fetched by Maven when missing
    (`file_name`: the jar's name when it is not `artifact-version.jar`)."""
    group, artifact_id, version = coordinate.split(":")
    folder = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact_id / version
    jar = folder / (file_name or f"{artifact_id}-{version}.jar")
    if not jar.exists():
        subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinate}", "-Dtransitive=false"], check=True
        )
    return jar
