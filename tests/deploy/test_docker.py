"""Dockerfile and docker-compose.yml, kept honest without a Docker engine: hadolint, the compose
file checked against what `stickyd serve` really accepts, and the image's command run as is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jsonschema_rs
import yaml

from stickyd.cli.child_service import ServiceProcess, free_port
from stickyd.service.http.app import create_app
from stickyd.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SETTINGS = {f"STICKYD_{name.upper()}" for name in Settings.model_fields}


def _instruction(name: str, text: str = DOCKERFILE) -> list[str]:
    return [line.split(None, 1)[1] for line in text.splitlines() if line.startswith(f"{name} ")]


def _stage(name: str) -> str:
    """The Dockerfile's lines from `FROM ... AS name` to the next FROM."""
    match = re.search(rf"^FROM \S+ AS {name}\n(.*?)(?=^FROM |\Z)", DOCKERFILE, re.S | re.M)
    assert match is not None, f"no stage {name}"
    return match.group(1)


def _image_command() -> list[str]:
    entrypoint = json.loads(_instruction("ENTRYPOINT")[-1])
    return entrypoint + json.loads(_instruction("CMD")[-1])


def _image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    stage = DOCKERFILE.split("AS service", 1)[1]
    block = re.search(r"^ENV (.+?)(?=^\S)", stage, re.S | re.M)
    assert block is not None
    for key, value in re.findall(r"(\w+)=(\S+)", block.group(1)):
        env[key] = value
    return env


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    result = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_runs_as_non_root_and_exposes_the_settings_port() -> None:
    assert _instruction("USER")[-1] not in ("root", "0")
    assert _instruction("EXPOSE")[-1] == _image_env()["STICKYD_PORT"]
    assert set(k for k in _image_env() if k.startswith("STICKYD_")) <= SETTINGS
    healthcheck = DOCKERFILE.split("HEALTHCHECK", 1)[1].split("ENTRYPOINT", 1)[0]
    assert "/v1/health" in healthcheck


def test_compose_matches_what_stickyd_serve_accepts() -> None:
    service = COMPOSE["services"]["stickyd"]
    assert service["command"][0] == "serve"
    help_text = subprocess.run(
        [sys.executable, "-m", "stickyd.cli", "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for option in (o for o in service["command"][1:] if o.startswith("--")):
        assert option in help_text
    env = service["environment"]
    assert set(env) <= SETTINGS, set(env) - SETTINGS
    Settings(**{k.removeprefix("STICKYD_").lower(): v for k, v in env.items()})  # values validate
    assert any(str(p).endswith(f":{env['STICKYD_PORT']}") for p in service["ports"])
    routes = set(create_app(Settings(workers=1)).openapi()["paths"])
    health = " ".join(service["healthcheck"]["test"])
    assert "/v1/health" in health and "/v1/health" in routes
    assert f":{env['STICKYD_PORT']}/" in health
    assert service["restart"] and service["deploy"]["resources"]["limits"]


def test_the_images_command_serves_health_outside_docker() -> None:
    port = free_port()
    env = {**os.environ, **_image_env(), "STICKYD_PORT": str(port), "STICKYD_WORKERS": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    child = subprocess.Popen(_image_command(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1)
                if response.json().get("ready"):
                    break
            except httpx.HTTPError:
                pass
            assert child.poll() is None, "the image's command exited"
            assert time.monotonic() < deadline, "no health answer within 60 s"
            time.sleep(0.2)
        assert response.status_code == 200
    finally:
        child.terminate()
        child.wait(timeout=10)


def test_compose_file_fits_the_compose_specification() -> None:
    """No engine here to run `docker compose config`: the Compose Specification's own JSON schema
    (compose-spec/compose-spec, schema/compose-spec.json, Apache-2.0, vendored beside this test)."""
    schema = json.loads((Path(__file__).parent / "compose-spec.json").read_text())
    errors = [error.message for error in jsonschema_rs.validator_for(schema).iter_errors(COMPOSE)]
    assert errors == []


def test_pipeline_and_java_live_only_in_the_pipeline_stage() -> None:
    service, pipeline = _stage("service"), _stage("pipeline")
    assert "openjdk" in pipeline and "openjdk" not in service
    assert '".[pipeline]"' in _stage("pipeline-build") and "pipeline]" not in _stage("build")
    assert "COPY --from=build " in service and "COPY --from=pipeline-build " in pipeline
    assert _instruction("USER", pipeline)[-1] not in ("root", "0")
    assert DOCKERFILE.rstrip().splitlines()[-1].startswith("CMD")
    assert DOCKERFILE.rfind("AS service") > DOCKERFILE.rfind("AS pipeline")  # a plain build gives the service


def _pipeline_command() -> list[str]:
    return list(COMPOSE["services"]["pipeline"]["command"])


def test_pipeline_profile_plans_through_the_healthy_service() -> None:
    pipeline = COMPOSE["services"]["pipeline"]
    assert pipeline["profiles"] == ["pipeline"] and pipeline["restart"] == "no"
    assert pipeline["depends_on"]["stickyd"]["condition"] == "service_healthy"
    command = _pipeline_command()
    assert command[0] == "plan"
    help_text = subprocess.run(
        [sys.executable, "-m", "stickyd.cli", "pipeline", "plan", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for option in (o for o in command if o.startswith("--")):
        assert option in help_text
    port = COMPOSE["services"]["stickyd"]["environment"]["STICKYD_PORT"]
    assert command[command.index("--service") + 1] == f"http://stickyd:{port}"
    mounts = {v.split(":")[1] for v in pipeline["volumes"]}
    assert command[1].startswith("/data/") and "/data" in mounts
    # compose's command replaces the image's CMD after its `stickyd pipeline` entrypoint
    pipeline_stage = _stage("pipeline")
    assert json.loads(_instruction("ENTRYPOINT", pipeline_stage)[-1]) == ["stickyd", "pipeline"]
    image_default = json.loads(_instruction("CMD", pipeline_stage)[-1])
    assert command[: len(image_default)] == image_default


def test_postgres_is_the_services_store_and_starts_first() -> None:
    postgres, stickyd = COMPOSE["services"]["postgres"], COMPOSE["services"]["stickyd"]
    assert "profiles" not in postgres and "pg_isready" in postgres["healthcheck"]["test"]
    assert "stickyd-state" in COMPOSE["volumes"]
    assert stickyd["depends_on"]["postgres"]["condition"] == "service_healthy"
    url = stickyd["environment"]["STICKYD_DATABASE_URL"]
    db = postgres["environment"]
    assert url.startswith(f"postgresql://{db['POSTGRES_USER']}:") and url.endswith(
        f"@postgres:5432/{db['POSTGRES_DB']}"
    )


def test_the_pipeline_profiles_command_runs_outside_docker(tmp_path: Path, service: ServiceProcess) -> None:
    """The compose command, with /data as a folder here and `stickyd:8000` as a real service."""
    from stickyd.pipeline.generate import FleetShape, fleet_rows, write_jsonl

    write_jsonl(tmp_path / "fleet.jsonl", fleet_rows(5, FleetShape(groups=12, max_members=20, max_topics=5)))
    command = [
        a.replace("/data", str(tmp_path)).replace("http://stickyd:8000", service.url) for a in _pipeline_command()
    ]
    env = {**os.environ, **COMPOSE["services"]["pipeline"]["environment"]}
    env["PYSPARK_PYTHON"] = sys.executable
    command[command.index("--master") + 1] = "local[2]"
    result = subprocess.run(
        [sys.executable, "-m", "stickyd.cli", "pipeline", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "12 groups planned, 0 rows rejected" in result.stderr
    assert (tmp_path / "plan-out" / "report.md").exists()
