"""bench/RESULTS.md: one section per benchmark command, each replaced when it runs again."""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine_line() -> str:
    return (
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} with "
        f"{os.cpu_count()} cores, Python {platform.python_version()}."
    )


def write_section(title: str, body: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# stickyd benchmark results\n"
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    text = pattern.sub(lambda _: section + "\n", text) if found else text.rstrip() + "\n\n" + section
    RESULTS.write_text(text.rstrip() + "\n")
