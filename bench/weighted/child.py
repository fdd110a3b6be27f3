"""A child process with its own figures: its stdout, its CPU seconds and its peak RSS as the
kernel counts them for it alone, and its exit code; killed past a cap.

Linux hands a child, at fork and again at exec, the high-water mark of its parent's memory, so a
child of the benchmark (which holds a 1M-partition group) would report at least the benchmark's
size. The command therefore runs under this module started as a small process of its own
(`python -m bench.weighted.child CAP_S COMMAND...`), whose own size is all its child inherits:
it prints the command's output, then one last line of JSON with the command's figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""the repository's root: `python -m bench...` runs from there, wherever the benchmark started."""


@dataclass(frozen=True)
class Measured:
    out: str
    cpu_s: float
    rss_peak_mb: float
    code: int


def run_measured(command: list[str], cap_s: float) -> Measured:
    """Run `command` under a small wrapper process, killed after cap_s."""
    wrapped = [sys.executable, "-m", "bench.weighted.child", str(cap_s), *command]
    done = subprocess.run(wrapped, capture_output=True, text=True, check=False, cwd=REPO)
    out, _, last = done.stdout.rstrip("\n").rpartition("\n")
    try:
        figures = json.loads(last)
    except json.JSONDecodeError:
        return Measured(done.stdout, 0.0, 0.0, done.returncode or 1)
    return Measured(out, figures["cpu_s"], figures["rss_peak_mb"], figures["code"])


def main() -> None:
    cap_s, command = float(sys.argv[1]), sys.argv[2:]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    timer = threading.Timer(cap_s, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    figures = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_peak_mb": usage.ru_maxrss / 1024,  # Linux: kilobytes
        "code": process.returncode,
    }
    print(out.rstrip("\n"))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
