"""bench/RESULTS.md: one section per benchmark command, each replaced when it runs again.

Every section starts with the line `machine_line()` gives (the date and the machine the figures
were taken on: CPU model and count, memory, operating system, Python and Java versions) and the
command that wrote it, so that no program has to say them and no figure is read without them.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = """# stickyd benchmark results

Current figures only. Each section is written by one benchmark command and replaced when that
command runs again; its first line gives the date, the machine and the command. Earlier figures
are in git's history.
"""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) // (1024 * 1024)} GB memory"
    except OSError:
        pass
    return "memory unknown"


def _java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return "no Java"
    found = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return f"Java {found.group(1)}" if found else "no Java"


def machine_line() -> str:
    """`Run 2026-11-24 on AMD EPYC, 2 cores, 23 GB memory; Linux x86_64, Python 3.11.7, Java 17.0.15.`"""
    return (
        f"Run {time.strftime('%Y-%m-%d', time.gmtime())} on {_cpu_model()}, {os.cpu_count()} cores, "
        f"{_memory_gb()}; {platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"{_java_version()}."
    )


def command_line() -> str:
    """The command that is running, as typed: `python -m bench.limits --classes consumer-1k`."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = (
        f"python -m {spec.name.removesuffix('.__main__')}" if spec and spec.name else f"python {Path(sys.argv[0]).name}"
    )
    return shlex.join([*program.split(), *sys.argv[1:]])


def write_section(title: str, body: str) -> None:
    """Put `body` under `## title`, after the machine line and the command that wrote it,
    replacing the section of that title if there is one."""
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    section = f"## {title}\n\n{machine_line()} Written by `{command_line()}`.\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    text = pattern.sub(lambda _: section + "\n", text) if found else text.rstrip() + "\n\n" + section
    RESULTS.write_text(text.rstrip() + "\n")
