"""HTTP load benchmark: requests/s and p50/p99 latency against `stickyd serve` on loopback,
beside the in-process solve time of the same problems, in one run.

    python -m bench.load            # small and medium problems at concurrency 1, 8, 32
    python -m bench.load --quick    # fewer requests
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx

from bench.results import machine_line, write_section
from service.process import running_service
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
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
    with running_service() as service:
        for label, body, total in cases:
            solve_ms = in_process_ms(body, repeat=50 if "small" in label else 10)
            for concurrency in CONCURRENCY:
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
            "generator is an asyncio httpx loop in another process on the same machine, sharing its cores.",
            "",
            header,
            *rows,
        ]
    )
    write_section("HTTP service", body_text)


if __name__ == "__main__":
    main()
