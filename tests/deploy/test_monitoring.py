"""The Grafana dashboard and the Prometheus alerts (deploy/), kept honest without Docker: every
series they read is one a real `stickyd serve` serves after a success, a fallback, a refusal and a
dead solver process; promtool checks the rules and the configuration; a real Prometheus (the
binary of Debian's `prometheus` package, which scripts/test unpacks into .tools/) scrapes the
service and evaluates every query; the compose file's `monitoring` profile wires it together."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from stickyd.cli.child_service import ServiceProcess, free_port, running_service
from tests.conftest import load_example
from tests.deploy.jmx_exporter import exported, match_text, series_of
from tests.deploy.promql import balanced, label_matchers, metric_names
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.plugin.jmx import read_mbeans
from tests.processes import MARK, new_mark, wait_until_none_marked
from tests.service.conftest import SMALLEST_MARGIN_MS, claimed_problem

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
DASHBOARD = json.loads((DEPLOY / "grafana" / "dashboards" / "stickyd.json").read_text())
ALERTS = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
PROMETHEUS_YML = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
JMX_EXPORTER = yaml.safe_load((DEPLOY / "prometheus" / "jmx-exporter.yml").read_text())
PLUGIN_PREFIX = "stickyd_plugin_"  # the Kafka plug-ins' series, from the brokers' JMX exporter
MADE_BY_PROMETHEUS = {"up"}  # series Prometheus writes about each scrape, not served by /metrics
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$instance": ".*"}


def prometheus_tool(name: str) -> str:
    """`promtool` or `prometheus`: on the PATH, or unpacked by scripts/test into .tools/."""
    found = shutil.which(name) or str(ROOT / ".tools" / "prometheus" / "usr" / "bin" / name)
    if not os.access(found, os.X_OK):
        pytest.fail(f"{name} not found: scripts/test unpacks Debian's `prometheus` package into .tools/")
    return found


def dashboard_queries() -> list[str]:
    panels = [p for p in DASHBOARD["panels"] if p["type"] != "row"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in ALERTS["groups"] for rule in group["rules"]]


def every_query() -> list[str]:
    return dashboard_queries() + [rule["expr"] for rule in alert_rules()]


def for_prometheus(expr: str) -> str:
    """A dashboard query as Prometheus itself takes it (Grafana fills in its variables)."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


@pytest.fixture(scope="module")
def busy_service() -> Iterator[ServiceProcess]:
    """A `stickyd serve` that has answered, fallen back, refused and lost a solver process, so that
    every series of /metrics the dashboard and the alerts read exists (a labelled series appears
    only once it has counted something). Impatient settings, as the overrun tests use: a 1 ms
    limit on 50,000 claimed partitions is handed to the fallback pool."""
    env = {
        MARK: new_mark(),
        "STICKYD_WORKERS": "1",
        "STICKYD_FALLBACK_WORKERS": "1",
        "STICKYD_RESPONSE_MARGIN_MS": str(SMALLEST_MARGIN_MS),
        "STICKYD_FLOOR_SCALE": "0",
    }
    with running_service(env) as service:
        url = f"{service.url}/v1/assign/consumer"
        assert httpx.post(url, json=load_example("consumer-kip54-unequal.json"), timeout=60).status_code == 200
        fell_back = httpx.post(url, json=claimed_problem(50, 200, limit_ms=1), timeout=60).json()
        assert fell_back["stats"]["fallback"], fell_back["stats"]
        refused = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"}, timeout=10)
        assert refused.status_code == 422
        _kill_a_solver_process(service)
        yield service
    assert wait_until_none_marked(env[MARK], 10.0) == {}


def _kill_a_solver_process(service: ServiceProcess) -> None:
    """SIGKILL the working solver process; wait until the pool has replaced it."""
    health = httpx.get(f"{service.url}/v1/health", timeout=10).json()
    os.kill(health["worker_pids"][0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        health = httpx.get(f"{service.url}/v1/health", timeout=10).json()
        if health["restarts"] >= 1 and health["ready"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"the killed solver process was not replaced: {health}")


@pytest.fixture(scope="module")
def served(busy_service: ServiceProcess) -> dict[str, set[str]]:
    """Sample name (with Prometheus' _total, _bucket, _sum, _count) -> its label names."""
    text = httpx.get(f"{busy_service.url}/metrics", timeout=10).text
    names: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    return names


def test_every_series_the_dashboard_and_alerts_read_is_served(served: dict[str, set[str]]) -> None:
    """No panel stays empty and no alert stays silent because of a misspelt metric or label."""
    assert "stickyd_fallbacks_total" in served and "stickyd_worker_restarts_total" in served
    variable_queries = [v["definition"] for v in DASHBOARD["templating"]["list"] if v["type"] == "query"]
    for query in variable_queries:
        match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query)
        assert match is not None, query
        assert match.group(1) in served
    for expr in every_query():
        assert balanced(expr), expr
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        if any(name.startswith(PLUGIN_PREFIX) for name in names):
            continue  # the Kafka plug-ins' series: test_every_plugin_series_..._the_exporter_makes
        unknown = names - set(served) - MADE_BY_PROMETHEUS
        assert not unknown, f"{expr!r} reads {unknown}, not served by /metrics"
        for name, labels in label_matchers(expr).items():
            known = served.get(name, {"job"}) | {"instance", "job"}  # Prometheus adds the target's labels
            assert labels <= known, f"{expr!r}: {name} has no label {labels - known}"


@pytest.fixture(scope="module")
def plugin_series() -> dict[str, set[str]]:
    """What the JMX exporter, with deploy/prometheus/jmx-exporter.yml, makes of the plug-ins' real
    MBeans (registered by the plug-in classes in a fresh JVM, read over JMX)."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    return exported(JMX_EXPORTER, read_mbeans())


def test_every_plugin_series_the_dashboard_and_alerts_read_is_one_the_exporter_makes(
    plugin_series: dict[str, set[str]],
) -> None:
    """The plug-in panels and alerts read series named by the exporter's rules from the MBeans the
    plug-ins register, with labels the rules give them; and every such series is read somewhere."""
    assert {"stickyd_plugin_outage", "stickyd_plugin_fallbacks_total", "stickyd_plugin_requests_total"} <= set(
        plugin_series
    )
    assert plugin_series["stickyd_plugin_fallbacks_total"] == {"assignor", "group_type", "cause"}
    read = set()
    for expr in every_query():
        names = {name for name in metric_names(expr) if name.startswith(PLUGIN_PREFIX)}
        unknown = names - set(plugin_series)
        assert not unknown, f"{expr!r} reads {unknown}, not made by jmx-exporter.yml from the plug-ins' MBeans"
        read |= names
        for name, labels in label_matchers(expr).items():
            if name in names:
                known = plugin_series[name] | {"instance", "job"}
                assert labels <= known, f"{expr!r}: {name} has no label {labels - known}"
    assert read == set(plugin_series), f"exported but never read: {set(plugin_series) - read}"


def test_every_exporter_rule_names_a_real_attribute_and_a_misspelt_one_is_dropped() -> None:
    """No dead rule in jmx-exporter.yml (each one names some attribute of the plug-ins' MBeans);
    an attribute no rule matches, or a bean of another domain, is not exported."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    beans = read_mbeans()
    used = {
        named[0]
        for bean, attributes in beans.items()
        for attribute, value in attributes.items()
        if (named := series_of(JMX_EXPORTER, match_text(bean, attribute, value))) is not None
    }
    assert used == set(range(len(JMX_EXPORTER["rules"])))
    bean = "kafka.stickyd:type=assignor-metrics,assignor=stickyd,group-type=consumer"
    assert series_of(JMX_EXPORTER, match_text(bean, "request-rate", 1.0)) is None
    assert series_of(JMX_EXPORTER, match_text(bean, "outage", 1.0)) == (
        3,
        "stickyd_plugin_outage",
        {"assignor", "group_type"},
    )
    assert series_of(JMX_EXPORTER, match_text(bean + ",cause=timeout", "fallback-total", 2.0)) == (
        0,
        "stickyd_plugin_fallbacks_total",
        {"assignor", "group_type", "cause"},
    )
    assert (
        series_of(JMX_EXPORTER, match_text("kafka.server:type=assignor-metrics,assignor=x,group-type=y", "outage", 0))
        is None
    )


def test_the_query_reader_catches_what_a_typo_breaks() -> None:
    """The checks above seen failing: a misspelt metric, a label the metric lacks, a lost bracket;
    and not fooled by functions, grouping labels, ranges, strings or Grafana's variables."""
    expr = (
        'histogram_quantile(0.99, sum by (le, endpoint) (rate(stickyd_request_second_bucket{instance=~"$instance", '
        'reason="a{b}"}[$__rate_interval]))) / on (instance) group_left sum(up{job="stickyd"}) > 2.5e-1'
    )
    assert metric_names(expr) == {"stickyd_request_second_bucket", "up"}
    assert label_matchers(expr) == {"stickyd_request_second_bucket": {"instance", "reason"}, "up": {"job"}}
    assert balanced(expr) and not balanced("sum(rate(stickyd_requests_total[5m])") and not balanced("a{b)")


def test_alert_rules_have_what_an_operator_needs() -> None:
    """Each rule: a name, an expression, a severity, a summary and a description; the ones on
    counters wait (`for`) or count over a window so that one blip does not page."""
    rules = alert_rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)) and len(names) >= 6
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule
        assert {"summary", "description"} <= set(rule["annotations"]), rule
        assert "for" in rule or "increase(" in rule["expr"], rule
    covered = " ".join(rule["expr"] for rule in rules)
    for series in ("stickyd_fallbacks_total", 'status="503"', 'reason=~"deadline', "stickyd_worker_restarts_total",
                   "stickyd_request_seconds_bucket", "stickyd_plugin_outage",
                   "stickyd_plugin_fallbacks_total"):  # fmt: skip
        assert series in covered, series


def test_promtool_accepts_the_rules_and_the_configuration() -> None:
    """`promtool check config` reads prometheus.yml and the rule files it names (every expression
    through Prometheus' own parser)."""
    result = subprocess.run(
        [prometheus_tool("promtool"), "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout + result.stderr


def test_promtool_unit_tests_fire_the_alerts() -> None:
    """deploy/prometheus/alerts.test.yml: synthetic series that must fire each alert, and quiet
    ones that must not."""
    result = subprocess.run(
        [prometheus_tool("promtool"), "test", "rules", str(DEPLOY / "prometheus" / "alerts.test.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set(re.findall(r"alertname: (\w+)", (DEPLOY / "prometheus" / "alerts.test.yml").read_text()))
    assert tested == {rule["alert"] for rule in alert_rules()}


@pytest.fixture(scope="module")
def prometheus(busy_service: ServiceProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus on a free loopback port with deploy/'s alert rules, scraping the service
    every second; stopped (its process group) after the module."""
    folder = tmp_path_factory.mktemp("prometheus")
    config = {
        **PROMETHEUS_YML,
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DEPLOY / "prometheus" / rule) for rule in PROMETHEUS_YML["rule_files"]],
        "scrape_configs": [
            {**PROMETHEUS_YML["scrape_configs"][0], "static_configs": [{"targets": [busy_service.url[7:]]}]}
        ],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with (folder / "prometheus.log").open("w") as log:
        child = subprocess.Popen(
            [prometheus_tool("prometheus"), f"--config.file={folder / 'prometheus.yml'}",
             f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_scrapes(url, child, folder / "prometheus.log")
        yield url
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def _wait_for_scrapes(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    """Until the target has been scraped a few times (a rate needs two samples in its window)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert child.poll() is None, log.read_text()[-2000:]
        try:
            samples = httpx.get(f"{url}/api/v1/query", params={"query": 'count_over_time(up{job="stickyd"}[1m])'})
            result = samples.json()["data"]["result"]
            if result and float(result[0]["value"][1]) >= 4:
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"Prometheus did not scrape the service within 60 s: {log.read_text()[-2000:]}")


def test_a_real_prometheus_evaluates_every_query_on_the_services_series(prometheus: str) -> None:
    """Every dashboard query and alert expression runs in Prometheus' own engine; the ones on the
    series this service has counted (fallbacks, restarts, latency) return data."""
    empty = []
    for expr in every_query():
        response = httpx.get(f"{prometheus}/api/v1/query", params={"query": for_prometheus(expr)}, timeout=10)
        assert response.status_code == 200 and response.json()["status"] == "success", (expr, response.text)
        if not response.json()["data"]["result"]:
            empty.append(expr)
    with_data = {"stickyd_fallbacks_total", "stickyd_worker_restarts_total", "stickyd_request_seconds_bucket"}
    for expr in dashboard_queries():
        if metric_names(expr) <= with_data and "histogram_quantile" not in expr:
            assert expr not in empty, f"no data for {expr!r}"
    rules = httpx.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
    loaded = {rule["name"]: rule["health"] for group in rules for rule in group["rules"]}
    assert set(loaded) == {rule["alert"] for rule in alert_rules()}
    assert all(health in ("ok", "unknown") for health in loaded.values()), loaded


def test_prometheus_scrapes_without_a_token_where_the_compose_file_requires_tokens() -> None:
    """The compose file's service requires bearer tokens (STICKYD_AUTH=required); /metrics does
    not, so the scrape configuration needs no credentials."""
    required = COMPOSE["services"]["stickyd"]["environment"]["STICKYD_AUTH"]
    env = {MARK: new_mark(), "STICKYD_AUTH": required, "STICKYD_WORKERS": "1", "STICKYD_FALLBACK_WORKERS": "1"}
    with running_service(env) as service:
        refused = httpx.post(f"{service.url}/v1/assign/consumer", json=load_example("consumer-kip54-unequal.json"))
        assert refused.status_code == 401
        scraped = httpx.get(f"{service.url}/metrics", timeout=10)
        assert scraped.status_code == 200 and "stickyd_rejected_total" in scraped.text
    assert wait_until_none_marked(env[MARK], 10.0) == {}
    assert "authorization" not in PROMETHEUS_YML["scrape_configs"][0]


def test_dashboard_panels_use_the_provisioned_data_source_and_do_not_overlap() -> None:
    datasources = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    uids = {source["uid"] for source in datasources["datasources"] if source["type"] == "prometheus"}
    panels = [p for p in DASHBOARD["panels"] if p["type"] != "row"]
    assert DASHBOARD["uid"] and len({p["id"] for p in DASHBOARD["panels"]}) == len(DASHBOARD["panels"])
    for panel in panels:
        assert panel["datasource"]["uid"] in uids, panel["title"]
        assert panel["targets"] and all(t["datasource"]["uid"] in uids and t["expr"] for t in panel["targets"])
    boxes = [p["gridPos"] for p in DASHBOARD["panels"]]
    assert all(box["x"] >= 0 and box["w"] > 0 and box["x"] + box["w"] <= 24 for box in boxes)
    cells = [(box["x"] + dx, box["y"] + dy) for box in boxes for dx in range(box["w"]) for dy in range(box["h"])]
    assert len(cells) == len(set(cells)), "panels overlap"
    titles = " ".join(p["title"].lower() for p in panels)
    for subject in ("fallback", "503", "deadline", "replaced", "response time", "plug-in outage"):
        assert subject in titles, subject


def _volume_source(service: dict[str, Any], container_path: str) -> Path:
    """The repository file or folder a service sees at `container_path` through its bind mounts."""
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./") and (container_path == target or container_path.startswith(target + "/")):
            return ROOT / source / container_path[len(target) :].lstrip("/")
    raise AssertionError(f"{container_path} is not mounted from the repository")


def test_monitoring_profile_wires_prometheus_and_grafana_to_the_files() -> None:
    """Both services only under `--profile monitoring`, images pinned, loopback ports; every path
    their configuration names exists in deploy/, the scrape target is the stickyd service's port
    and Grafana's data source is the Prometheus service."""
    services = COMPOSE["services"]
    prometheus, grafana = services["prometheus"], services["grafana"]
    for service in (prometheus, grafana):
        assert service["profiles"] == ["monitoring"]
        assert re.search(r":v?\d+\.\d+\.\d+$", service["image"]), service["image"]
        assert all(str(port).startswith("127.0.0.1:") for port in service["ports"])
    assert "profiles" not in services["stickyd"]  # `--profile monitoring up` brings the service too

    flags = dict(arg.removeprefix("--").split("=", 1) for arg in prometheus["command"])
    config = _volume_source(prometheus, flags["config.file"])
    assert config == DEPLOY / "prometheus" / "prometheus.yml"
    assert all((config.parent / rule).is_file() for rule in PROMETHEUS_YML["rule_files"])
    port = COMPOSE["services"]["stickyd"]["environment"]["STICKYD_PORT"]
    assert PROMETHEUS_YML["scrape_configs"][0]["static_configs"][0]["targets"] == [f"stickyd:{port}"]
    listen_port = flags["web.listen-address"].rsplit(":", 1)[1]

    provisioning = _volume_source(grafana, "/etc/grafana/provisioning")
    datasources = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert [source["url"] for source in datasources] == [f"http://prometheus:{listen_port}"]
    providers = yaml.safe_load((provisioning / "dashboards" / "stickyd.yml").read_text())["providers"]
    for provider in providers:
        folder = _volume_source(grafana, provider["options"]["path"])
        assert (folder / "stickyd.json").is_file(), folder
    home = _volume_source(grafana, grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert home == DEPLOY / "grafana" / "dashboards" / "stickyd.json"
    assert {"prometheus-data", "grafana-data"} <= set(COMPOSE["volumes"])


def test_compose_file_with_the_monitoring_profile_fits_the_compose_specification() -> None:
    schema = json.loads((Path(__file__).parent / "compose-spec.json").read_text())
    errors = [error.message for error in jsonschema_rs.validator_for(schema).iter_errors(COMPOSE)]
    assert errors == []
    profiles = {p for service in COMPOSE["services"].values() for p in service.get("profiles", [])}
    assert "monitoring" in profiles
