"""HTTP load benchmark: requests/s and p50/p99 latency against `stickyd serve` on loopback,
beside the in-process solve time of the same problems, in one run.

    python -m bench.load            # small and medium problems at concurrency 1, 8, 32
    python -m bench.load --quick    # fewer requests
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.results import machine_line, write_section
from cli.child_service import running_service
from solvers import solve_consumer

CONCURRENCY = [1, 8, 32]


def problem(partitions: int, members: int) -> dict[str, Any]:
    topics = {f"t{i}": partitions // 10 for i in range(10)}
    names = sorted(topics)
    members_ = [{"id": f"m{i:04d}", "topics": names[: 5 + i % 6]} for i in range(members)]
    return {"topics": topics, "members": members_, "options": {"time_limit_ms": 5000}}


def in_process_ms(body: dict[str, Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        solve_consumer(body)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def load(url: str, body: dict[str, Any], concurrency: int, total: int) -> dict[str, float]:
    latencies: list[float] = []
    payload = httpx.Request("POST", "/", json=body).content
    headers = {"content-type": "application/json"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(total):
            queue.put_nowait(i)

        async def worker() -> None:
            while not queue.empty():
                queue.get_nowait()
                started = time.perf_counter()
                response = await client.post("/v1/assign/consumer", content=payload, headers=headers)
                latencies.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()

        await client.get("/v1/health")
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": total / wall,
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


def load_wrk(url: str, body: dict[str, Any], concurrency: int, seconds: int) -> dict[str, float]:
    """The same measurement with wrk (a C load generator): Python's own client saturates a
    core of this 2-core machine long before the server does."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(
            f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--latency", "-s", script.name]
    out = subprocess.run([*command, f"{url}/v1/assign/consumer"], capture_output=True, text=True, check=True).stdout
    Path(script.name).unlink()
    if "Non-2xx" in out:
        raise RuntimeError(f"non-2xx answers under load:\n{out}")

    def ms(label: str) -> float:
        value = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if value is None:
            raise RuntimeError(f"no {label} latency in wrk's output:\n{out}")
        return float(value.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[value.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return {"rps": float(rps.group(1)) if rps else 0.0, "p50": ms("50%"), "p99": ms("99%")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--python-client", action="store_true", help="use the httpx loop even if wrk exists")
    args = parser.parse_args()
    scale = 0.25 if args.quick else 1.0
    cases = [
        ("small (100 partitions x 10 members)", problem(100, 10), 2000),
        ("medium (10,000 partitions x 200 members)", problem(10_000, 200), 200),
    ]
    header = (
        "| problem | concurrency | requests/s | p50 ms | p99 ms | in-process solve p50 ms | "
        "HTTP overhead (p50 - solve) ms |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    print(header, flush=True)
    rows = []
    use_wrk = shutil.which("wrk") is not None and not args.python_client
    generator = (
        "wrk (one thread, keep-alive connections)"
        if use_wrk
        else "an asyncio httpx loop (install Debian's wrk for figures not capped by the client)"
    )
    with running_service() as service:
        for label, body, total in cases:
            solve_ms = in_process_ms(body, repeat=50 if "small" in label else 10)
            for concurrency in CONCURRENCY:
                if use_wrk:
                    r = load_wrk(service.url, body, concurrency, seconds=3 if args.quick else 10)
                else:
                    n = max(concurrency * 4, int(total * scale * (1 if concurrency > 1 else 0.25)))
                    r = asyncio.run(load(service.url, body, concurrency, n))
                overhead = f"{r['p50'] - solve_ms:.1f}" if concurrency == 1 else "-"
                line = (
                    f"| {label} | {concurrency} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | "
                    f"{solve_ms:.1f} | {overhead} |"
                )
                print(line, flush=True)
                rows.append(line)
    body_text = "\n".join(
        [
            machine_line(),
            "",
            "`stickyd serve` with default settings (one solver process per core) on 127.0.0.1; the load",
            f"generator is {generator}, in another process on the same machine, sharing its cores.",
            "",
            header,
            *rows,
        ]
    )
    write_section("HTTP service", body_text)


if __name__ == "__main__":
    main()
