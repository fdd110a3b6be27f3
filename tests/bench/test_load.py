"""bench/load.py reads wrk's `--latency` report into numbers (units converted to ms, non-2xx
answers counted), and refuses a report it cannot read instead of writing a zero."""

from __future__ import annotations

import pytest

from bench.load import parse_wrk

REPORT = """Running 10s test @ http://127.0.0.1:8000/v1/assign/consumer
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    26.83ms   17.19ms    1.02s    51.19%
    Req/Sec   476.20     50.44   578.00     80.00%
  Latency Distribution
     50%  850.00us
     75%   40.21ms
     90%   46.58ms
     99%    1.20s
  4790 requests in 10.05s, 3.52MB read
  Non-2xx or 3xx responses: 7
Requests/sec:    476.62
Transfer/sec:    358.44KB
"""


def test_wrk_report_becomes_rate_percentiles_in_ms_and_non_2xx_count() -> None:
    result = parse_wrk(REPORT)
    assert result.requests_per_s == pytest.approx(476.62)
    assert result.p50_ms == pytest.approx(0.85)
    assert result.p99_ms == pytest.approx(1200.0)
    assert (result.requests, result.non_2xx) == (4790, 7)


def test_a_report_without_latency_distribution_is_refused() -> None:
    without = "\n".join(line for line in REPORT.splitlines() if "%  " not in line)
    with pytest.raises(ValueError, match="latency"):
        parse_wrk(without)
