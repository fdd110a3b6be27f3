"""An independent, plain CP-SAT reference for Streams targets: one boolean per (task, client,
role), all three balances as hard floor/ceil bounds, then fewest active moves, then fewest
standby moves (with `options.stickiness: restore_cost`, the least summed `task_costs` of each).
Shares no code with solvers/."""

from __future__ import annotations

import re
from typing import Any

from ortools.sat.python import cp_model


def reference_streams(problem: dict[str, Any]) -> dict[str, int] | None:
    """The optimal (active_moves, standby_moves), or with restore costs (active_move_cost,
    standby_move_cost); None when no target is 100% balanced."""
    subs = {s["id"]: s for s in problem["subtopologies"]}
    tasks = [(s["id"], p) for s in problem["subtopologies"] for p in range(s["partitions"])]
    clients = problem["clients"]
    config = problem.get("config", {})
    replicas = min(config.get("num_standby_replicas", 0), len(clients) - 1)
    caps = [c.get("capacity", 1) for c in clients]
    total_cap = sum(caps)

    def task_of(name: str) -> tuple[str, int] | None:
        m = re.match(r"^(.+)_(\d+)$", name)
        if not m or m.group(1) not in subs or int(m.group(2)) >= subs[m.group(1)]["partitions"]:
            return None
        return m.group(1), int(m.group(2))

    owners: dict[tuple[str, int], set[int]] = {}
    for j, c in enumerate(clients):
        for name in c.get("active", []):
            if (t := task_of(name)) is not None:
                owners.setdefault(t, set()).add(j)
    prev_active = {t: next(iter(js)) for t, js in owners.items() if len(js) == 1}
    named_standby = {(task_of(n), j) for j, c in enumerate(clients) for n in c.get("standby", [])}
    # a standby claim on a stateless task is ignored: stateless tasks have no standbys
    prev_standby = {
        (t, j) for t, j in named_standby if t is not None and subs[t[0]]["stateful"] and prev_active.get(t) != j
    }

    model = cp_model.CpModel()
    a = {(t, j): model.new_bool_var(f"a{t}{j}") for t in tasks for j in range(len(clients))}
    s = {(t, j): model.new_bool_var(f"s{t}{j}") for t in tasks for j in range(len(clients))}
    for t in tasks:
        model.add(sum(a[t, j] for j in range(len(clients))) == 1)
        want = replicas if subs[t[0]]["stateful"] else 0
        model.add(sum(s[t, j] for j in range(len(clients))) == want)
        for j in range(len(clients)):
            model.add(a[t, j] + s[t, j] <= 1)

    def within(expr: Any, total: int, j: int) -> None:
        model.add(expr * total_cap >= (total * caps[j] // total_cap) * total_cap)
        model.add(expr * total_cap <= -(-total * caps[j] // total_cap) * total_cap)

    stateful_tasks = [t for t in tasks if subs[t[0]]["stateful"]]
    for j in range(len(clients)):
        within(sum(a[t, j] for t in tasks), len(tasks), j)
        within(sum(a[t, j] + s[t, j] for t in stateful_tasks), len(stateful_tasks) * (1 + replicas), j)
        for sid in subs:
            mine = [t for t in tasks if t[0] == sid]
            within(sum(a[t, j] for t in mine), len(mine), j)

    weighed = problem.get("options", {}).get("stickiness") == "restore_cost"
    costs = problem.get("task_costs", {}) if weighed else {}

    def cost(t: tuple[str, int]) -> int:
        return int(costs.get(f"{t[0]}_{t[1]}", 1))

    moves = sum(cost(t) * (1 - a[t, j]) for t, j in prev_active.items() if subs[t[0]]["stateful"])
    standby_moves = sum(cost(t) * (1 - a[t, j] - s[t, j]) for t, j in prev_standby)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    result = {}
    names = ("active_move_cost", "standby_move_cost") if weighed else ("active_moves", "standby_moves")
    for name, expr in zip(names, (moves, standby_moves), strict=True):
        model.minimize(expr)
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return None
        assert status == cp_model.OPTIMAL
        result[name] = int(round(solver.objective_value))
        model.add(expr == result[name])
    return result
