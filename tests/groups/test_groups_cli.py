"""`stickyd groups list|show|history|leave|forget` against a real service."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

from stickyd.cli.main import app
from tests.groups.conftest import ok, rebalance

WIDE = {"COLUMNS": "200"}


def stickyd(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["groups", *args, "--url", url], env=WIDE)
    return result.exit_code, result.output


def test_the_groups_commands_show_leave_history_and_forget(http: httpx.Client) -> None:
    url = str(http.base_url).rstrip("/")
    problem = {"topics": {"orders": 6}, "members": [{"id": m, "topics": ["orders"]} for m in ("ann", "bob")]}
    first = ok(rebalance(http, "cli-group", -1, problem))
    ok(rebalance(http, "cli-group", 0, problem))
    code, out = stickyd(url, "list")
    assert code == 0 and "cli-group" in out and "consumer" in out
    code, out = stickyd(url, "show", "cli-group")
    ann = first["solution"]["assignment"]["ann"]["orders"]
    assert code == 0 and "generation 1" in out and f"orders[{ann[0]}-{ann[-1]}]" in out
    code, out = stickyd(url, "leave", "cli-group", "bob")
    assert code == 0 and "leaving, draining" in out
    code, out = stickyd(url, "history", "cli-group", "--limit", "5")
    assert code == 0 and "direct-equal" in out and "ann, bob" in out  # generation 0's newcomers
    code, out = stickyd(url, "leave", "cli-group", "carol")
    assert code == 2 and "members[0]: member 'carol' is not in group 'cli-group'" in out
    code, out = stickyd(url, "forget", "cli-group", "--yes")
    assert code == 0 and "forgot group cli-group" in out
    code, out = stickyd(url, "show", "cli-group")
    assert code == 2 and "no group 'cli-group'" in out


def test_an_unreachable_service_is_one_line_and_exit_1() -> None:
    code, out = stickyd("http://127.0.0.1:9", "list")
    assert code == 1 and out.startswith("stickyd: cannot reach the service at http://127.0.0.1:9")
    assert len(out.strip().splitlines()) == 1


def test_groups_explain_tells_a_partitions_owners_in_words(http: httpx.Client) -> None:
    url = str(http.base_url).rstrip("/")
    problem = {"topics": {"orders": 6}, "members": [{"id": m, "topics": ["orders"]} for m in ("ann", "bob")]}
    first = ok(rebalance(http, "cli-explain", -1, problem))
    ok(rebalance(http, "cli-explain", 0, {**problem, "members": problem["members"][:1]}))
    bobs = first["solution"]["assignment"]["bob"]["orders"][0]
    code, out = stickyd(url, "explain", "cli-explain", "orders", str(bobs))
    assert code == 0, out
    assert f"orders-{bobs} in consumer group cli-explain" in out
    assert "given to bob when the group was first balanced" in out
    assert "moved from bob, which left the group, to ann" in out
    assert f"orders-{bobs} is with ann since generation 1" in out
    code, out = stickyd(url, "explain", "cli-explain", "orders", "6")
    assert code == 2 and "partition: topic 'orders' has 6 partitions (0-5)" in out
    code, out = stickyd(url, "explain", "cli-nobody", "orders", "0")
    assert code == 2 and "no group 'cli-nobody'" in out
