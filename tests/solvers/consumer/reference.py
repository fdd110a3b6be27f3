"""An independent, deliberately plain exact reference for the consumer `optimal` objective.

One boolean per (partition-number unit, member); claims resolved with plain dicts; every level
of the contract's objective solved and fixed in turn with CP-SAT. Shares no code with solvers/.
"""

from __future__ import annotations

from typing import Any

from ortools.sat.python import cp_model


def resolve_claims(problem: dict[str, Any]) -> dict[tuple[str, int], str]:
    """(topic, partition) -> owner: highest generation wins, ties between members lose."""
    best: dict[tuple[str, int], tuple[int, set[str]]] = {}
    topics = problem["topics"]
    for member in problem["members"]:
        gen = member.get("generation", -1)
        for topic, parts in member.get("owned", {}).items():
            if topic not in topics or topic not in member["topics"]:
                continue
            for p in set(parts):
                if p >= topics[topic]:
                    continue
                g, who = best.get((topic, p), (-2, set()))
                if gen > g:
                    best[(topic, p)] = (gen, {member["id"]})
                elif gen == g:
                    who.add(member["id"])
    return {tp: next(iter(who)) for tp, (_, who) in best.items() if len(who) == 1}


def reference_objective(problem: dict[str, Any], full_lp: bool = False) -> dict[str, int]:
    """The optimal figures: assigned, sum of squared loads, moves, rack misses (k = 0), or
    moves then sum of squares (k > 0, loads within the balanced optimum's [min - k, max + k]).
    `full_lp`: CP-SAT with its full LP relaxation (slower on small cases, but it proves the
    moves of mixed-weight joins of ~80 members, where the default's bound stalls)."""
    k = problem.get("options", {}).get("max_imbalance", 0)
    ref = _Reference(problem, full_lp=full_lp)
    assigned = ref.settle(sum(ref.assigned_terms), maximise=True)
    if k == 0:
        sq = ref.settle(sum(ref.squares))
        kept = ref.settle(sum(ref.kept_terms), maximise=True)
        miss = ref.settle(sum(ref.miss_terms)) if ref.miss_terms else 0
        return {"assigned": assigned, "squares": sq, "moves": ref.owned - kept, "racks": miss}
    ref.settle(sum(ref.squares))
    live = [v for v, t in zip(ref.solved_loads(), ref.load_terms.values(), strict=True) if t]
    bounded = _Reference(problem, (max(0, min(live, default=0) - k), max(live, default=0) + k), full_lp)
    bounded.settle(sum(bounded.assigned_terms), maximise=True)
    kept = bounded.settle(sum(bounded.kept_terms), maximise=True)
    sq = bounded.settle(sum(bounded.squares))
    return {"assigned": assigned, "squares": sq, "moves": bounded.owned - kept}


class _Reference:
    def __init__(self, problem: dict[str, Any], bounds: tuple[int, int] | None = None, full_lp: bool = False) -> None:
        topics: dict[str, int] = problem["topics"]
        members = problem["members"]
        subs = {m["id"]: {t for t in m["topics"] if t in topics} for m in members}
        subscribed = set().union(*subs.values())
        joined = [list(g) for g in problem.get("copartitioned", [])]
        in_join = {t for g in joined for t in g}
        groups = joined + [[t] for t in sorted(subscribed - in_join)]
        owner = resolve_claims(problem)
        racks = problem.get("partition_racks", {})
        rack_of = {m["id"]: m.get("rack") for m in members}
        model = cp_model.CpModel()
        self.model = model
        self.load_terms: dict[str, list[Any]] = {m: [] for m in subs}
        self.assigned_terms: list[Any] = []
        self.kept_terms: list[Any] = []
        self.miss_terms: list[Any] = []
        for g, group in enumerate(groups):
            live = [t for t in group if t in subscribed]
            if not live:
                continue
            units = min(topics[t] for t in group)
            for p in range(units):
                choices = []
                for m, s in subs.items():
                    reads = [t for t in live if t in s]
                    if not reads:
                        continue
                    x = model.new_bool_var(f"x_{g}_{p}_{m}")
                    choices.append(x)
                    self.load_terms[m].append(len(reads) * x)
                    self.assigned_terms.append(len(reads) * x)
                    self.kept_terms.append(sum(1 for t in reads if owner.get((t, p)) == m) * x)
                    rack = rack_of[m]
                    if rack is not None:
                        miss = sum(1 for t in reads if t in racks and racks[t][p] and rack not in racks[t][p])
                        self.miss_terms.append(miss * x)
                if choices:
                    model.add_exactly_one(choices)
        # claims on partitions beyond a join's smallest partition count can never be kept: they
        # are not counted as owned (README: "What counts as owned")
        assignable = {t: min(topics[x] for x in g) for g in groups for t in g}
        self.owned = sum(1 for (t, p) in owner if t in assignable and p < assignable[t])
        total = sum(topics[t] for t in subscribed)
        self.loads, self.squares = [], []
        for m, terms in self.load_terms.items():
            load = model.new_int_var(0, total, f"load_{m}")
            model.add(load == sum(terms))
            if bounds is not None and terms:
                model.add(load >= bounds[0])
                model.add(load <= bounds[1])
            square = model.new_int_var(0, total * total, f"sq_{m}")
            model.add_multiplication_equality(square, [load, load])
            self.loads.append(load)
            self.squares.append(square)
        self.solver = cp_model.CpSolver()
        self.solver.parameters.num_workers = 1
        self.solver.parameters.max_time_in_seconds = 60
        if full_lp:
            self.solver.parameters.linearization_level = 2

    def settle(self, expr: Any, maximise: bool = False) -> int:
        """Optimise one level and keep it at its optimum for the next."""
        self.model.clear_objective()
        self.model.maximize(expr) if maximise else self.model.minimize(expr)
        assert self.solver.solve(self.model) == cp_model.OPTIMAL
        value = int(round(self.solver.objective_value))
        self.model.add(expr == value)
        return value

    def solved_loads(self) -> list[int]:
        return [int(self.solver.value(x)) for x in self.loads]
