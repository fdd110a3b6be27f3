"""bench/ui.py at a tiny size: it makes the group's generations through the API, measures both
pages drawn in chromium (a time and the bytes loaded, never zero) and times the API calls behind
them."""

from __future__ import annotations

from bench.ui import make_group, measure, time_calls
from stickyd.cli.child_service import running_service


def test_the_ui_benchmark_measures_both_pages_and_the_calls_behind_them() -> None:
    with running_service({"STICKYD_WORKERS": "1"}) as service:
        assert make_group(service.url, members=30, partitions=600, generations=4) > 0
        times, loaded = measure(service.url, "#/group/big", "group", runs=2)
        assert len(times) == 2 and all(0 < t < 30 for t in times)
        assert loaded > 10_000  # the page, its script and style, and the group's state and timeline
        calls = time_calls(service.url, members=30, partitions=600)
        assert [name.split("`")[1].split()[0] for name, _ in calls] == ["GET", "GET", "GET", "POST"]
        assert all(seconds > 0 for _, seconds in calls)
