"""Java processes started from plugins/kafka's build, in one place: the class paths, a log4j2 file
per process, the `java` command line, and starting and stopping (SIGTERM, SIGKILL after a grace).

    command = java_command("kafka.Kafka", "server.properties", log4j=write_log4j2(folder, log), heap="-Xmx512m")
    process = start_java(command, stdout=folder / "stdout.log", own_group=True)
    ...
    stop_java(process, grace_s=15.0)

Used by the test broker (`tests.kafka.apache_kafka`), the Streams application instances
(`tests.kafka.streams.streams_app`) and the JVM benchmarks (`bench.streams_kafka`, `bench.kafka_assignors`)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

PLUGIN_TARGET = Path(__file__).resolve().parents[2] / "plugins" / "kafka" / "target"
KAFKA_LIBS = PLUGIN_TARGET / "kafka-libs"
PLUGIN_JAR = PLUGIN_TARGET / "stickyd-kafka.jar"
TEST_CLASSES = PLUGIN_TARGET / "test-classes"
CLASSPATH = f"{KAFKA_LIBS}/*:{PLUGIN_JAR}"
"""Kafka's runtime jars and the plug-in: what a broker with stickyd installed has."""
APP_CLASSPATH = f"{CLASSPATH}:{TEST_CLASSES}"
"""Plus plugins/kafka's test classes (the Streams test application, the benchmark harnesses)."""

LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
logger.stickyd.name = io.stickyd
logger.stickyd.level = info
"""


def jmx_remote_flags(port: int) -> list[str]:
    """JMX remote on 127.0.0.1:`port` (registry and RMI server on the one port), no authentication and
    no TLS: for loopback tests only. `io.stickyd.kafka.jmx.JmxDump 127.0.0.1:PORT` reads it."""
    return [
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Dcom.sun.management.jmxremote.local.only=true",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        "-Djava.rmi.server.hostname=127.0.0.1",
    ]


def kafka_jars_built() -> bool:
    return PLUGIN_JAR.is_file() and any(KAFKA_LIBS.glob("kafka_2.13-*.jar"))


def kafka_version() -> str:
    """The Apache Kafka release the Maven build copied (the test broker's), e.g. "4.4.0"."""
    jars = sorted(KAFKA_LIBS.glob("kafka_2.13-*.jar"))
    return jars[0].name.removeprefix("kafka_2.13-").removesuffix(".jar") if jars else "(not built)"


def write_log4j2(folder: Path, log: Path, info_loggers: Mapping[str, str] | None = None) -> Path:
    """A log4j2 configuration in `folder`: WARN and up to `log`, io.stickyd at INFO, and each of
    `info_loggers` (short name -> logger name) at INFO too."""
    text = LOG4J2.format(log=log) + "".join(
        f"logger.{key}.name = {name}\nlogger.{key}.level = info\n" for key, name in (info_loggers or {}).items()
    )
    config = folder / "log4j2.properties"
    config.write_text(text)
    return config


def java_command(
    main_class: str,
    *args: str,
    classpath: str = CLASSPATH,
    heap: str = "-Xmx512m",
    log4j: Path | None = None,
    quick_start: bool = True,
    jvm_flags: Sequence[str] = (),
) -> list[str]:
    """`java` with a bounded heap and the serial collector (the machine is shared); `quick_start`
    (C1 only) for processes that start often and run briefly, off for benchmarks; `jvm_flags` added."""
    flags = [heap, "-XX:+UseSerialGC", *jvm_flags]
    if quick_start:
        flags += ["-XX:TieredStopAtLevel=1", "-Xshare:auto"]
    if log4j is not None:
        flags.append(f"-Dlog4j2.configurationFile={log4j}")
    return ["java", *flags, "-cp", classpath, main_class, *args]


def start_java(
    command: list[str], stdout: Path, *, env: Mapping[str, str] | None = None, own_group: bool = False
) -> subprocess.Popen[bytes]:
    """Starts `command` with stdout and stderr appended to `stdout`; `own_group` puts it in a new
    process group (then `stop_java` signals the whole group)."""
    with stdout.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=own_group,
        )


def stop_java(process: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """SIGTERM (the JVM's shutdown hooks run), SIGKILL after grace_s; to the process group when the
    process leads one."""
    group = _leads_group(process)
    if process.poll() is None:
        _signal(process, signal.SIGTERM, group)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_s)
    if group or process.poll() is None:
        _signal(process, signal.SIGKILL, group)
    process.wait()


def kill_java(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL at once: no shutdown hooks (a crash, as a group coordinator sees it)."""
    _signal(process, signal.SIGKILL, _leads_group(process))
    process.wait()


def _leads_group(process: subprocess.Popen[bytes]) -> bool:
    with suppress(ProcessLookupError):
        return os.getpgid(process.pid) == process.pid
    return False


def _signal(process: subprocess.Popen[bytes], sig: signal.Signals, group: bool) -> None:
    with suppress(ProcessLookupError):
        if group:
            os.killpg(process.pid, sig)
        else:
            os.kill(process.pid, sig)
