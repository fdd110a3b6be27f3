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
import yaml

from service.app import create_app
from service.process import free_port
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SETTINGS = {f"STICKYD_{name.upper()}" for name in Settings.model_fields}


def _instruction(name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in DOCKERFILE.splitlines() if line.startswith(f"{name} ")]


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
        [sys.executable, "-m", "service", "serve", "--help"], capture_output=True, text=True, check=True
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
