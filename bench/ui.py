"""The web page with a large group: a consumer group of 2,000 members and 100,000 partitions with
100 retained generations, made through the API (each generation one member leaves and another
joins), then `/ui/#/group/...` opened in headless chromium (the machine's own, driven by
Playwright, no network but loopback). Reports the time from navigation to the page drawn (the
page sets `data-ready` once its members, grid and charts are in the DOM) and the bytes it loaded.

    python -m bench.ui                       # 2,000 x 100,000, 100 generations
    python -m bench.ui --members 200 --partitions 10000 --generations 20 --no-write   # a quick look

Target: the group page drawn in under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import httpx

from bench.results import machine_line, write_section
from stickyd.cli.child_service import running_service

TOPICS = 20
RUNS = 5
TARGET_S = 2.0


def problem(members: list[str], partitions: int) -> dict[str, Any]:
    topics = {f"topic-{t:02d}": partitions // TOPICS for t in range(TOPICS)}
    return {
        "topics": topics,
        "members": [{"id": m, "topics": sorted(topics)} for m in members],
        "options": {"time_limit_ms": 10_000},
    }


def make_group(url: str, members: int, partitions: int, generations: int) -> float:
    """The group's generations, made through the API; the seconds they took."""
    roster = [f"consumer-{i:05d}" for i in range(members)]
    started = time.monotonic()
    generation = -1
    with httpx.Client(base_url=url, timeout=300) as http:
        for round_ in range(generations):
            if round_:
                roster[round_ % members] = f"consumer-{members + round_:05d}"  # one leaves, one joins
            body = {"kind": "consumer", "generation": generation, "problem": problem(roster, partitions)}
            answered = http.post("/v1/groups/big/rebalance", json=body)
            answered.raise_for_status()
            generation = answered.json()["generation"]
    return time.monotonic() - started


def page_bytes(page: Any) -> int:
    """Bodies of the page, its assets and its API answers, as the browser received them."""
    sizes = page.evaluate(
        "() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => e.encodedBodySize)"
    )
    return int(sum(sizes))


def measure(url: str, fragment: str, ready: str, runs: int = RUNS) -> tuple[list[float], int]:
    """Seconds from navigation to `data-ready` on each of `runs` fresh tabs, and the bytes loaded."""
    from playwright.sync_api import sync_playwright

    from tests.ui.conftest import launch_chromium

    times, loaded = [], 0
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1360, "height": 900})
                page = context.new_page()
                page.goto(f"{url}/ui/{fragment}")
                page.wait_for_selector(f"body[data-ready={ready}]", timeout=120_000)
                times.append(page.evaluate("() => window.stickydRenderedMs") / 1000)
                loaded = page_bytes(page)
                context.close()
        finally:
            browser.close()
    return times, loaded


def time_calls(url: str, members: int, partitions: int) -> list[tuple[str, float]]:
    """Median seconds of the API calls behind the page and its forms, 3 calls each."""
    partition = min(123, partitions // TOPICS - 1)
    calls = [
        ("`GET /v1/groups/big` (state with its assignment)", "GET", "/v1/groups/big", None),
        ("`GET /v1/groups/big/timeline` (the charts)", "GET", "/v1/groups/big/timeline?limit=100", None),
        (
            "`GET /v1/groups/big/explain` (why)",
            "GET",
            f"/v1/groups/big/explain?topic=topic-07&partition={partition}",
            None,
        ),
        (
            "`POST /v1/groups/big/what-if` (one member out, one in)",
            "POST",
            "/v1/groups/big/what-if",
            {"remove": [f"consumer-{members - 1:05d}"], "add": [{"id": "newcomer"}]},
        ),
    ]
    timed = []
    with httpx.Client(base_url=url, timeout=300) as http:
        for name, method, path, body in calls:
            seconds = []
            for _ in range(3):
                started = time.monotonic()
                http.request(method, path, json=body).raise_for_status()
                seconds.append(time.monotonic() - started)
            timed.append((name, statistics.median(seconds)))
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--generations", type=int, default=100)
    parser.add_argument("--no-write", action="store_true", help="print, do not write bench/RESULTS.md")
    args = parser.parse_args()
    env = {"STICKYD_WORKERS": "2", "STICKYD_HISTORY_MAX_GENERATIONS": str(args.generations)}
    with running_service(env, startup_s=120) as service:
        seeded = make_group(service.url, args.members, args.partitions, args.generations)
        print(f"{args.generations} generations made in {seeded:.0f} s")
        group_times, group_bytes = measure(service.url, "#/group/big", "group")
        list_times, list_bytes = measure(service.url, "", "groups")
        calls = time_calls(service.url, args.members, args.partitions)
    rows = [
        ("the group (`#/group/big`)", group_times, group_bytes),
        ("the groups (`/ui/`)", list_times, list_bytes),
    ]
    table = "\n".join(
        f"| {name} | {times[0]:.2f} | {statistics.median(times[1:]):.2f} | {max(times[1:]):.2f} | {size / 1e6:.2f} MB |"
        for name, times, size in rows
    )
    calls_table = "\n".join(f"| {name} | {seconds * 1000:,.0f} |" for name, seconds in calls)
    size = f"{args.members:,} members x {args.partitions:,} partitions ({TOPICS} topics)"
    verdict = "met" if max(group_times) < TARGET_S else "missed"
    body = f"""{machine_line()}

`python -m bench.ui`: a consumer group of {size} with {args.generations} retained generations
(made through the API in {seeded:.0f} s; each generation one member leaves and another joins),
served by `stickyd serve` (SQLite) on loopback and opened in headless chromium {RUNS} times, each
in a fresh tab. Time: from navigation to the page drawn (members' loads, the assignment grid, the
history charts in the DOM). Bytes: the bodies of the page, its script and style and its API
answers (the group's state with its assignment, its timeline).

| page | first s | median of the rest s | worst of the rest s | bytes |
|---|---:|---:|---:|---:|
{table}

Target: the group page drawn in under {TARGET_S:.0f} s: {verdict} (worst {max(group_times):.2f} s).

The API calls behind the page and its forms, on the same group (median of 3):

| call | ms |
|---|---:|
{calls_table}
"""
    print(body)
    if not args.no_write:
        write_section("The web page (`python -m bench.ui`)", body)


if __name__ == "__main__":
    main()
