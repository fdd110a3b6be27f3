"""Malformed consumer problems are rejected with one message naming the field, and nothing else."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

from stickyd.models import ProblemError
from stickyd.solvers import solve_consumer

GOOD: dict[str, Any] = {
    "topics": {"orders": 12, "payments": 4},
    "members": [
        {"id": "c1", "topics": ["orders", "payments"], "owned": {"orders": [0, 1]}, "generation": 7},
        {"id": "c2", "topics": ["orders"], "rack": "az1"},
    ],
}


def _with(path: str, value: Any) -> dict[str, Any]:
    """GOOD with `value` put at a dotted path ('members.0.id'); a value of ... deletes it."""
    problem = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = problem
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    leaf: Any = int(last) if isinstance(node, list) else last
    if value is ...:
        del node[leaf]
    else:
        node[leaf] = value
    return problem


BAD = [
    ("duplicate member id", _with("members.1.id", "c1"), "members[1].id", "duplicate"),
    ("negative partition count", _with("topics.orders", -1), "topics.orders", "greater than or equal to 0"),
    ("count as a string", _with("topics.orders", "12"), "topics.orders", "integer"),
    ("count as a float", _with("topics.orders", 1.5), "topics.orders", "integer"),
    ("count as a bool", _with("topics.orders", True), "topics.orders", "integer"),
    (
        "negative owned partition",
        _with("members.0.owned.orders", [3, -7]),
        "members[0].owned.orders[1]",
        "greater than or equal to 0",
    ),
    ("owned not a list", _with("members.0.owned.orders", 3), "members[0].owned.orders", "list"),
    ("unknown strategy", _with("options.strategy", "greedy"), "options.strategy", "optimal"),
    ("unknown protocol", _with("options.protocol", "eagerly"), "options.protocol", "eager"),
    ("zero time limit", _with("options.time_limit_ms", 0), "options.time_limit_ms", "greater than 0"),
    (
        "negative max_imbalance",
        _with("options.max_imbalance", -1),
        "options.max_imbalance",
        "greater than or equal to 0",
    ),
    (
        "copartitioned unknown topic",
        _with("copartitioned", [["orders", "nope"]]),
        "copartitioned[0][1]",
        "unknown topic",
    ),
    (
        "topic in two groups",
        _with("copartitioned", [["orders", "payments"], ["orders"]]),
        "copartitioned[1][0]",
        "also in",
    ),
    ("topic twice in one group", _with("copartitioned", [["orders", "orders"]]), "copartitioned[0][1]", "twice"),
    ("empty co-partition group", _with("copartitioned", [[]]), "copartitioned[0]", "at least 1"),
    ("empty member id", _with("members.0.id", ""), "members[0].id", "at least 1"),
    ("member id a number", _with("members.0.id", 5), "members[0].id", "string"),
    ("missing topics", _with("topics", ...), "topics", "required"),
    ("missing member topics", _with("members.0.topics", ...), "members[0].topics", "required"),
    ("no members", _with("members", []), "members", "at least 1"),
    ("unknown member field", _with("members.0.ownd", {}), "members[0].ownd", "unknown field"),
    ("unknown top-level field", _with("topic", {}), "topic", "unknown field"),
    ("generation below -1", _with("members.0.generation", -5), "members[0].generation", "greater than or equal to -1"),
    ("racks for unknown topic", _with("partition_racks", {"x": []}), "partition_racks.x", "unknown topic"),
    (
        "rack lists of wrong length",
        _with("partition_racks", {"payments": [["a"]]}),
        "partition_racks.payments",
        "4 partitions",
    ),
    ("members not a list", _with("members", {"c1": {}}), "members", "list"),
    ("empty rack", _with("members.1.rack", ""), "members[1].rack", "at least 1"),
]


@pytest.mark.parametrize(("case", "problem", "field", "reason"), BAD, ids=[b[0] for b in BAD])
def test_rejected_with_the_field_named(case: str, problem: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(ProblemError) as caught:
        solve_consumer(problem)
    assert caught.value.field == field, str(caught.value)
    assert reason in caught.value.reason, str(caught.value)


def test_body_that_is_not_an_object_is_rejected() -> None:
    with pytest.raises(ProblemError, match="expected a JSON object"):
        solve_consumer([1, 2])  # type: ignore[arg-type]


def test_stale_claims_are_not_errors() -> None:
    """Out-of-range and unsubscribed claims are ignored (with a warning), not rejected."""
    problem = _with("members.1.owned", {"orders": [99], "payments": [0]})
    solution = solve_consumer(problem)
    assert solution.stats.owned == 2
    assert any("ignored" in w for w in solution.stats.warnings)


def test_models_import_no_solver_or_web_framework() -> None:
    code = (
        "import sys, models; bad = {'ortools', 'fastapi', 'pyspark', 'solvers', 'service'} & "
        "{m.split('.')[0] for m in sys.modules}; print(sorted(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
