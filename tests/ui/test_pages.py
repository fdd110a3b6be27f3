"""`/ui/` in headless chromium with no network but the service's loopback address: each page
renders from the service alone, shows the members and the charts, "what if" shows the figures the
API gives and stores nothing, "why" says what the API says, and the token gate holds (no token: no
data; another tenant's group: not found). Screenshots land in pytest's temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ui.conftest import Site, use_token


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-screenshots")


def open_group(page: Any, site: Site, group: str) -> None:
    use_token(page, site)
    page.wait_for_selector("body[data-ready=groups]")
    page.click(f"#groups a[href='#/group/{group}']")
    page.wait_for_selector("body[data-ready=group]")


def test_the_page_and_its_assets_come_from_the_service_with_a_strict_policy(site: Site) -> None:
    page = httpx.get(f"{site.url}/ui/", timeout=10)
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    for asset in ("/ui/assets/ui.js", "/ui/assets/ui.css"):
        assert asset in page.text and httpx.get(f"{site.url}{asset}", timeout=10).status_code == 200
    assert httpx.get(f"{site.url}/ui", timeout=10).headers["location"] == "/ui/"


def test_the_groups_page_lists_the_tenants_groups_with_their_last_rebalance(page: Any, site: Site, shots: Path) -> None:
    use_token(page, site)
    page.wait_for_selector("body[data-ready=groups]")
    rows = page.locator("#groups tbody tr")
    assert rows.count() == 2
    orders = page.locator("tr[data-group='orders-app']").inner_text()
    assert "consumer" in orders and "4 (1 leaving) (1 held)" in orders and "proven" in orders
    assert "min-cost-flow" in orders or "direct-equal" in orders
    assert "hidden-app" not in page.content()  # the other tenant's group
    page.screenshot(path=str(shots / "groups.png"), full_page=True)
    assert all(url.startswith(site.url) for url in site.requested), site.requested


def test_a_consumer_group_shows_its_members_grid_history_and_roster(page: Any, site: Site, shots: Path) -> None:
    open_group(page, site, "orders-app")
    with site.http() as api:
        state = api.get("/v1/groups/orders-app").json()
        timeline = api.get("/v1/groups/orders-app/timeline").json()["generations"]
    bars = page.locator("#loads rect[data-member]")
    assert sorted(bars.evaluate_all("rs => rs.map(r => r.dataset.member)")) == ["ann", "bob", "cat", "dan", "eve"]
    assert page.inner_text("#fact-generation") == str(state["generation"])
    for topic, parts in state["assignment"]["ann"].items():
        cell = page.locator(f"#assignment-grid tr[data-item='{topic}'] td[data-member='ann']")
        assert cell.inner_text() == str(len(parts))
    for chart in ("chart-moves", "chart-balance", "chart-time", "chart-answers"):
        assert page.get_attribute(f"#{chart} svg", "data-points") == str(len(timeline))
    assert page.locator("#chart-moves rect.bar").count() == len(timeline)
    roster = page.inner_text("#roster")
    assert "eve: new" in roster and "bob: leaving, empty, safe to stop" in roster and "dan: lost, held until" in roster
    page.screenshot(path=str(shots / "group.png"), full_page=True)


def test_a_streams_application_shows_its_clients_and_tasks(page: Any, site: Site, shots: Path) -> None:
    open_group(page, site, "streams-app")
    assert page.locator("#loads rect[data-member]").count() == 3
    assert page.locator("#assignment-grid tbody tr").count() == 2  # subtopologies 0 and 1
    assert "s3: new" in page.inner_text("#roster")
    page.click("#loads text[data-pick='s3']")  # its name: s3 runs no active task yet, its bar is a sliver
    page.click("#wi-run")
    page.wait_for_selector("body[data-what-if]")
    with site.http() as api:
        expected = api.post("/v1/groups/streams-app/what-if", json={"remove": ["s3"], "strategy": "optimal"}).json()
    shown = figures(page)
    assert shown["proposed.moves"] == expected["proposed"]["moves"] and shown["proposed.members"] == 2
    page.fill("#why-partition", "1")
    page.click("#why-run")
    page.wait_for_selector("body[data-why]")
    with site.http() as api:
        explained = api.get("/v1/groups/streams-app/explain", params={"topic": "0", "partition": 1}).json()
    assert page.inner_text("#why-summary") == explained["summary"]
    page.screenshot(path=str(shots / "streams.png"), full_page=True)


def figures(page: Any) -> dict[str, int]:
    cells = page.locator("[data-figure]").evaluate_all("cs => cs.map(c => [c.dataset.figure, c.textContent])")
    return {name: int(text.replace(",", "")) for name, text in cells}


def test_what_if_in_the_page_gives_the_figures_the_api_gives_and_stores_nothing(
    page: Any, site: Site, shots: Path
) -> None:
    open_group(page, site, "orders-app")
    with site.http() as api:
        before = api.get("/v1/groups/orders-app").json()
        history = api.get("/v1/groups/orders-app/history").json()
        changes = {"remove": ["ann"], "add": [{"id": "gus"}], "add_partitions": {"orders": 4}, "strategy": "optimal"}
        expected = api.post("/v1/groups/orders-app/what-if", json=changes).json()
    page.click("#loads rect[data-member='cat']")  # a click on a bar picks the member, a second one drops it
    page.click("#loads rect[data-member='ann']")
    assert page.input_value("#wi-remove") == "cat, ann"
    page.click("#loads rect[data-member='cat']")
    assert page.input_value("#wi-remove") == "ann"
    page.fill("#wi-add", "gus")
    page.select_option("#wi-topic", "orders")
    page.fill("#wi-partitions", "4")
    page.select_option("#wi-strategy", "optimal")
    page.click("#wi-run")
    page.wait_for_selector("body[data-what-if]")
    shown = figures(page)
    for side in ("current", "proposed"):
        for key in ("partitions", "members", "min_load", "max_load", "moves"):
            assert shown[f"{side}.{key}"] == expected[side][key], (side, key)
    assert expected["solver"] in page.inner_text("#wi-answer")
    assert "ann" in page.inner_text("#wi-members") and "gus" in page.inner_text("#wi-members")
    page.screenshot(path=str(shots / "what-if.png"), full_page=True)
    with site.http() as api:
        assert api.get("/v1/groups/orders-app").json() == before
        assert api.get("/v1/groups/orders-app/history").json() == history


def test_why_in_the_page_says_what_the_api_says(page: Any, site: Site) -> None:
    open_group(page, site, "orders-app")
    page.click("#assignment-grid tr[data-item='payments'] th")  # a click on a row picks its topic
    assert page.input_value("#why-topic") == "payments"
    page.select_option("#why-topic", "orders")
    page.fill("#why-partition", "2")
    page.click("#why-run")
    page.wait_for_selector("body[data-why]")
    with site.http() as api:
        explained = api.get("/v1/groups/orders-app/explain", params={"topic": "orders", "partition": 2}).json()
    assert page.inner_text("#why-summary") == explained["summary"]
    reasons = page.locator("#why-steps tbody tr").evaluate_all("rs => rs.map(r => r.dataset.reason)")
    assert reasons[0] == explained["steps"][0]["reason"]
    assert set(reasons) <= {step["reason"] for step in explained["steps"]}
    page.fill("#why-partition", "99")
    page.click("#why-run")
    page.wait_for_selector("#why-error")
    assert "partition: topic 'orders' has 12 partitions" in page.inner_text("#why-error")


def test_without_a_token_the_page_shows_no_data(page: Any, site: Site, shots: Path) -> None:
    for where in ("/ui/", "/ui/#/group/orders-app"):
        page.goto(f"{site.url}{where}")
        page.wait_for_selector("body[data-ready=error]")
        assert page.locator("#gate").is_visible()
        assert "orders-app" not in page.inner_text("main")
        assert page.locator("#groups, [data-member], #why-card").count() == 0
    page.screenshot(path=str(shots / "no-token.png"))
    use_token(page, site, "stk_" + "x" * 43)  # a token the service never issued
    page.wait_for_selector("body[data-ready=error]")
    assert page.locator("#gate").is_visible()


def test_another_tenants_group_is_not_found(page: Any, site: Site) -> None:
    use_token(page, site)
    page.wait_for_selector("body[data-ready=groups]")
    page.goto(f"{site.url}/ui/#/group/hidden-app")
    page.wait_for_selector("body[data-ready=error]")
    assert "Not found: group hidden-app" in page.inner_text("#not-found")
    assert "zed" not in page.content()
    with site.http() as api:
        assert api.post("/v1/groups/hidden-app/what-if", json={}).status_code == 404
        assert api.get("/v1/groups/hidden-app/explain", params={"topic": "orders", "partition": 0}).status_code == 404
    with httpx.Client(base_url=site.url, timeout=30) as anonymous:
        assert anonymous.post("/v1/groups/orders-app/what-if", json={}).status_code == 401
        assert anonymous.get("/v1/groups/orders-app/timeline").status_code == 401


def test_the_cluster_page_says_when_the_service_watches_no_cluster(page: Any, site: Site) -> None:
    use_token(page, site)
    page.wait_for_selector("body[data-ready=groups]")
    page.click("nav a[href='#/cluster']")
    page.wait_for_selector("body[data-ready=cluster]")
    assert "watches no Kafka cluster" in page.inner_text("#no-cluster")


def test_the_browser_asked_nothing_of_another_host(site: Site) -> None:
    """Runs after the pages above: every request any of them made went to the service."""
    assert site.requested and all(url.startswith(f"{site.url}/") for url in site.requested), site.requested
