"""The repository speaks of the product alone.

Every text file git tracks (code, comments, docstrings, tests, bench programs and
bench/RESULTS.md, Java sources, README.md, docs/, scripts) is read line by line, and a line fails
when it tells how the project was built instead of what stickyd does:

- numbered work sessions and numbered issues of this project's tracker; another project's issues,
  written with its name ("aio-libs/aiokafka #1126", "KAFKA-10121"), pass;
- people and how they ran things (who led, other engineers, quiet re-runs);
- documents outside this repository: "seed 000" ... "seed 004" and "source document(s)" (say
  KIP-54, KAFKA-10121, KIP-315, KIP-480, KIP-429/KIP-441 instead), "contract section N" and
  "section N of the contract" (say docs/wire-format.md and the section's name).

Ordinary prose passes: a session timeout with its unit, "a session's token", "the leader",
"sessions of SQLAlchemy", "seed 7"; the cases below pin both sides. A failure names file:line and
the phrase; rewrite the sentence to state the fact about the product, or drop it (history lives
in git).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()
SKIPPED_SUFFIXES = (".gz", ".zip", ".jar", ".png", ".jpg", ".ico", ".parquet")

# Each pattern is matched case-insensitively against one line.
BUILD_WORDS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        # a numbered session or range of sessions; not a timeout, which carries its unit
        "work session": r"\bsessions?\s+\d+(?:\s*[-–]\s*\d+)?\b(?!\s*(?:s|ms|sec|seconds?|min|minutes?)\b)",
        # a numbered issue or issues, with or without #; another project's are exempted below
        "issue tracker": r"\bissues?\s+#?\d+\b",
        "the lead": r"\bthe\s+lead\b(?!\s+time)|\blead's\b",
        "engineers": r"\b(?:other|another|this)\s+engineers?\b",
        "re-run": r"\bquiet(?:ly)?\s+re-?runs?\b|\bre-?run\s+quietly\b",
        "seed document": r"\bseeds?\s+0\d{2}\b",
        "source document": r"\bsource\s+documents?\b",
        "contract section": r"\bcontract(?:'s)?\s+sections?\s+\d|\bsections?\s+\d+\s+of\s+the\s+contract\b",
    }.items()
}

# "aio-libs/aiokafka issue #1126", "zendesk/ruby-kafka's issue 846": another repository's tracker
ANOTHER_PROJECT = re.compile(r"[\w.-]+/[\w.-]+(?:'s)?\s+$")


def build_words(line: str) -> list[str]:
    """The phrases of `line` that speak of how the project was built (empty for product prose)."""
    found = []
    for pattern in BUILD_WORDS.values():
        for match in pattern.finditer(line):
            if pattern is BUILD_WORDS["issue tracker"] and ANOTHER_PROJECT.search(line[: match.start()]):
                continue
            found.append(match.group(0))
    return found


def tracked_text_files() -> list[tuple[str, str]]:
    """(path, text) of every file git tracks, binary and compressed files left out."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: nothing to list")
    files = []
    for path in filter(None, listed.split("\0")):
        if path == SELF or path.endswith(SKIPPED_SUFFIXES) or not (ROOT / path).is_file():
            continue
        raw = (ROOT / path).read_bytes()
        if b"\0" in raw:
            continue
        try:
            files.append((path, raw.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return files


def test_no_tracked_file_speaks_of_how_the_project_was_built() -> None:
    """No line of any tracked text file names a work session, this project's issues, the people
    who built it, re-runs, or documents outside the repository (see the module docstring)."""
    offenders = [
        f"{path}:{number}: {phrase!r}"
        for path, text in tracked_text_files()
        for number, line in enumerate(text.splitlines(), start=1)
        for phrase in build_words(line)
    ]
    if offenders:
        pytest.fail(
            f"{len(offenders)} lines speak of how the project was built, not of the product; state the fact "
            "about stickyd instead (KIP-54, KAFKA-10121, KIP-315, KIP-480, KIP-429/KIP-441 for the seed "
            "documents, docs/wire-format.md for the contract's sections) or drop the sentence:\n"
            + "\n".join(offenders),
            pytrace=False,
        )


@pytest.mark.parametrize(
    "line",
    [
        "measured in session 25 at 1M",
        "sessions 24-27 agree",
        "Session 26's quiet run",
        "the target of issue 14",
        "issues 14 and 16",
        "see issue #16",
        "a quiet re-run by the lead",
        "re-run quietly",
        "beside other engineers' tests",
        "seed 000's six steps",
        "the example of source document 001",
        "the source documents",
        "contract section 4",
        "the contract's section 2",
        "section 1 of the contract",
    ],
)
def test_words_about_the_build_are_found(line: str) -> None:
    assert build_words(line), line


@pytest.mark.parametrize(
    "line",
    [
        "heartbeat 1 s, session 6 s, `stickyd.timeout.ms=500`",
        "a session's token is hashed",
        "sessions of SQLAlchemy, one per request",
        "the leader computes the assignment",
        "aio-libs/aiokafka #1126 and zendesk/ruby-kafka #846",
        "zendesk/ruby-kafka issue #846",
        "KAFKA-10121's sorted round robin",
        "generated with seed 7",
        "session.timeout.ms 6000",
        "the lead time of a rebalance",
        "docs/wire-format.md, consumer assignment",
    ],
)
def test_product_prose_passes(line: str) -> None:
    assert not build_words(line), line
