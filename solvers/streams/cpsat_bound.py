"""The Streams levels' certificate of last resort: an integer programme on classes of tasks.

Where neither the flow relaxations nor the linear programme meet the answer (typically a leave:
a previous standby that must make room for a promoted active, where the relaxations fractionally
shuffle one standby between two clients), a CP-SAT model decides it. Tasks with the same
subtopology, previous active owner and previous standby clients are interchangeable for every
level, so the model counts, per class and client, the actives and standbys the client holds
(integers, not one boolean per task and client). A client holds each task in one role at most,
so its actives plus standbys of a class never exceed the class's size; every real target gives
counts that meet these constraints, which makes the model a relaxation of every target: when its
proven optimum equals the answer's figures level by level (least stateful excess, most kept
actives, most kept standbys), the answer is optimal at every level.

With restore costs, the standby level also holds what the active flow's optimal face says of
every target with the least active cost (StreamsTarget.kept_face: tasks kept, or moved, by all
of them): the same targets, but a linear relaxation that no longer mixes fractional moves of
tasks whose costs differ by orders of magnitude, so the level is proven in a fraction of the time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.streams.flow import StreamsTarget
from stickyd.solvers.streams.standby_bound import StreamsBound
from stickyd.solvers.streams.standby_dealing import deal_by_matching
from stickyd.solvers.time_policy import CPSAT_FIRST_TRY_SHARE

CPSAT_CELLS_LIMIT = 60_000
"""Beyond this many (class, client) cells the model is not tried."""


@dataclass(frozen=True)
class CpsatVerdict:
    proven: bool
    """the optimum is proven: the answer's figures, or `better`'s."""
    better: StreamsTarget | None = None
    """a target that beats the answer at some level (and is optimal), when the model found one."""


TaskClass = tuple[int, int, frozenset[int], int]
"""(subtopology, previous active client, previous standby clients, restore cost): tasks
interchangeable for every level."""


class _BuildTimeout(Exception):
    """Building the model used up the time: no proof."""


def cpsat_certify(
    index: StreamsIndex, target: StreamsTarget, answer: StreamsBound, seconds: float, proven: int = 0
) -> CpsatVerdict:
    """Whether CP-SAT proves, within `seconds`, that no target beats `answer` at any level; or a
    proven optimal target that does. `target` is the answer (it hints the search);
    `answer.stateful_excess` must count only stateful excess (the active and per-subtopology
    shares are held hard). The first `proven` levels are known optimal already (they are held).
    Each level is solved on its own (its optimum proven) before the next holds it."""
    stateful_tasks = np.flatnonzero(index.stateful).tolist()
    if seconds <= 0 or not stateful_tasks:
        return CpsatVerdict(False)
    classes: dict[TaskClass, list[int]] = {}
    cost = index.move_cost.tolist()
    for t in stateful_tasks:
        key = (int(index.task_sub[t]), int(index.prev_active[t]), index.prev_standby[t], cost[t])
        classes.setdefault(key, []).append(t)
    if len(classes) * index.client_count > CPSAT_CELLS_LIMIT:
        return CpsatVerdict(False)
    started = time.monotonic()
    try:
        model = _CertificateModel(index, target, classes, started + seconds)
    except _BuildTimeout:
        return CpsatVerdict(False)
    beaten = model.solve_levels(answer, proven, started + seconds)
    if beaten is None or not beaten:
        return CpsatVerdict(beaten is not None)
    better = _realise(index, classes, model.class_counts(), model.stateless_values())
    return CpsatVerdict(better is not None, better)


class _CertificateModel:
    """The integer programme: per class and client, the actives and standbys held there; per
    stateless subtopology and client, its tasks run there; the balances; the three levels."""

    def __init__(
        self, index: StreamsIndex, target: StreamsTarget, classes: dict[TaskClass, list[int]], build_by: float
    ) -> None:
        self.index = index
        self.classes = classes
        self.keys = list(classes)
        self.n = index.client_count
        self.model = cp_model.CpModel()
        self.solver = cp_model.CpSolver()
        self.act: list[list[cp_model.IntVar]] = []
        self.sby: list[list[cp_model.IntVar]] = []
        self.stateless_counts: dict[int, list[cp_model.IntVar]] = {}
        self.excess: list[cp_model.IntVar] = []
        self.kept_face = target.kept_face
        self._class_variables(target, build_by)
        actives = self._subtopology_balance(target)
        self._client_balance(target, actives)

    def _class_variables(self, target: StreamsTarget, build_by: float) -> None:
        active, standby, r = target.active, target.standby, self.index.replicas
        clients = range(self.n)
        # per class and client: actives and standbys held there, one role per task and client
        for c, tasks in enumerate(self.classes.values()):
            if c % 64 == 0 and time.monotonic() > build_by:
                raise _BuildTimeout
            size = len(tasks)
            on = np.bincount(active[tasks], minlength=self.n).tolist()
            standby_clients = standby[tasks].ravel()
            beside = np.bincount(standby_clients[standby_clients >= 0], minlength=self.n).tolist()
            self.act.append([self.model.new_int_var(0, size, f"a{c}_{j}") for j in clients])
            self.sby.append([self.model.new_int_var(0, size if r else 0, f"s{c}_{j}") for j in clients])
            # every task of the class has one active and `r` standbys
            self.model.add(sum(self.act[c]) == size)
            self.model.add(sum(self.sby[c]) == size * r)
            for j in clients:
                self.model.add(self.act[c][j] + self.sby[c][j] <= size)
                # the hint: the answer's own counts
                self.model.add_hint(self.act[c][j], on[j])
                self.model.add_hint(self.sby[c][j], beside[j])

    def _subtopology_balance(self, target: StreamsTarget) -> list[Any]:
        """Each client's actives, summed over the subtopologies, each within its share."""
        index, model, clients = self.index, self.model, range(self.n)
        actives: list[Any] = [0] * self.n
        for s in range(len(index.subtopologies)):
            lo, hi = index.subtopology_bounds(s)
            stateless_tasks = int(((index.task_sub == s) & ~index.stateful).sum())
            count: list[Any]
            if stateless_tasks:
                # a stateless subtopology's tasks are interchangeable: only their count per client matters
                count = [model.new_int_var(int(lo[j]), int(hi[j]), f"w{s}_{j}") for j in clients]
                ran = np.bincount(target.active[index.task_sub == s], minlength=self.n)
                for j in clients:
                    model.add_hint(count[j], int(ran[j]))
                model.add(sum(count) == stateless_tasks)
                self.stateless_counts[s] = count
            else:
                mine = [c for c, key in enumerate(self.keys) if key[0] == s]
                count = [sum(self.act[c][j] for c in mine) for j in clients]
                for j in clients:
                    # task parallel balance: each client runs its share of the subtopology's tasks
                    model.add_linear_constraint(count[j], int(lo[j]), int(hi[j]))
            actives = [actives[j] + count[j] for j in clients]
        return actives

    def _client_balance(self, target: StreamsTarget, actives: list[Any]) -> None:
        index, model = self.index, self.model
        active, standby = target.active, target.standby
        lo_a, hi_a = index.active_bounds()
        lo_f, hi_f = index.stateful_bounds()
        stateful_count = int(index.stateful.sum())
        answer_held = np.bincount(active[index.stateful], minlength=self.n) + np.bincount(
            standby[standby >= 0], minlength=self.n
        )
        for j in range(self.n):
            # active balance: each client runs its capacity-weighted share of all tasks
            model.add_linear_constraint(actives[j], int(lo_a[j]), int(hi_a[j]))
            # stateful balance, softly: the excess over the client's stateful share is measured
            held = sum(self.act[c][j] + self.sby[c][j] for c in range(len(self.keys)))
            over = model.new_int_var(0, stateful_count * (1 + index.replicas), f"e{j}")
            model.add_hint(over, int(max(lo_f[j] - answer_held[j], answer_held[j] - hi_f[j], 0)))
            model.add(over >= int(lo_f[j]) - held)
            model.add(over >= held - int(hi_f[j]))
            self.excess.append(over)

    def _levels(self, answer: StreamsBound) -> tuple[tuple[Any, int], ...]:
        """Each level's objective (to minimise) and the answer's figure on it."""
        keys, act, sby = self.keys, self.act, self.sby
        # (each task weighs its restore cost where moves are weighed, 1 where they are counted)
        weight = [key[3] if self.index.weighted else 1 for key in keys]
        kept_actives = sum(weight[c] * act[c][key[1]] for c, key in enumerate(keys) if key[1] >= 0)
        # a previous standby client that holds the task in either role keeps its state
        kept_standbys = sum(weight[c] * (act[c][j] + sby[c][j]) for c, key in enumerate(keys) for j in key[2])
        previous = sum(weight[c] * len(key[2]) * len(self.classes[key]) for c, key in enumerate(keys))
        return (
            (sum(self.excess), answer.stateful_excess),  # least stateful excess
            (-kept_actives, -answer.kept_actives),  # most kept actives
            (-kept_standbys, answer.standby_moves - previous),  # most kept standbys
        )

    def solve_levels(self, answer: StreamsBound, proven: int, stop_by: float) -> bool | None:
        """Each level solved to its proven optimum, then held for the next. Whether some level
        beats the answer; None when a level was not proven in time."""
        model, solver = self.model, self.solver
        levels = self._levels(answer)
        solver.parameters.num_workers = 1
        # no symmetry detection: it does not keep to max_time_in_seconds
        solver.parameters.symmetry_level = 0
        beaten = False
        variables = [v for row in self.act + self.sby for v in row] + [
            v for row in self.stateless_counts.values() for v in row
        ]
        for level, (objective, reached) in enumerate(levels):
            if level == 2 and not beaten and answer.stateful_excess == 0:
                # the answer's actives are optimal: only the active flow's optimal face is left
                self._hold_kept_face()
            if level < proven or (level == 0 and reached == 0):
                # a level the relaxations proved (or no excess at all): held at the answer's figure
                model.add(objective == reached)
                continue
            model.minimize(objective)
            if not self._solve_in_time(stop_by):
                return None
            best = round(solver.objective_value)
            beaten = beaten or best < reached
            # the next level holds this one at its optimum, hinted with this level's answer
            model.add(objective == best)
            model.clear_hints()
            for v in variables:
                model.add_hint(v, solver.value(v))
        return beaten

    def _solve_in_time(self, stop_by: float) -> bool:
        """Whether the level's optimum is proven by `stop_by`: first with the linear relaxation of
        every constraint (the balance bounds come from adding them up) for part of the time,
        then, when that did not prove it, with CP-SAT's default relaxation for the rest."""
        solver = self.solver
        for linearization, share in ((2, CPSAT_FIRST_TRY_SHARE), (1, 1.0)):
            left = stop_by - time.monotonic()
            if left <= 0:
                return False
            solver.parameters.linearization_level = linearization
            solver.parameters.max_time_in_seconds = left * share
            if solver.solve(self.model) == cp_model.OPTIMAL:
                return True
        return False

    def _hold_kept_face(self) -> None:
        """Every target without stateful excess and with the least active move cost is, as a
        flow, optimal for the active flow's (stateful overflow, active moves) levels, so it keeps
        exactly the actives that every such flow keeps (StreamsTarget.kept_face): each class's
        kept actives lie between its tasks kept in all of them and those moved in none."""
        if self.kept_face is None:
            return
        face = self.kept_face
        for c, key in enumerate(self.keys):
            if key[1] < 0:
                continue
            held = face[self.classes[key]]
            always, never = int((held == 1).sum()), int((held == 0).sum())
            self.model.add_linear_constraint(self.act[c][key[1]], always, len(held) - never)

    def class_counts(self) -> dict[TaskClass, tuple[list[int], list[int]]]:
        solver = self.solver
        return {
            key: ([solver.value(v) for v in self.act[c]], [solver.value(v) for v in self.sby[c]])
            for c, key in enumerate(self.keys)
        }

    def stateless_values(self) -> dict[int, list[int]]:
        return {s: [self.solver.value(v) for v in count] for s, count in self.stateless_counts.items()}


def _realise(
    index: StreamsIndex,
    classes: dict[TaskClass, list[int]],
    counts: dict[TaskClass, tuple[list[int], list[int]]],
    stateless: dict[int, list[int]],
) -> StreamsTarget | None:
    """A target with the model's counts: within a class the tasks are interchangeable, so any
    layout of its actives with those counts is as good as any other, and the standbys are then a
    matching (none beside its active, one per task and client); None if they cannot be dealt."""
    r = index.replicas
    active = np.full(index.task_count, -1, dtype=np.int64)
    standby = np.full((index.task_count, max(r, 1)), -1, dtype=np.int64)[:, :r]
    for key, tasks in classes.items():
        on, beside = counts[key]
        # the previous owner's kept actives first, then the rest in client order
        order = ([key[1]] if key[1] >= 0 else []) + [j for j in range(index.client_count) if j != key[1]]
        layout = [j for j in order for _ in range(on[j])]
        active[tasks] = layout
        if not r:
            continue
        held = {t: [int(j)] for t, j in zip(tasks, layout, strict=True)}
        dealt = deal_by_matching([(y, j) for j, y in enumerate(beside) if y], dict.fromkeys(tasks, r), held)
        if dealt is None:
            return None
        for t, replicas in dealt.items():
            standby[t] = sorted(replicas)
    for s, count in stateless.items():
        tasks = np.flatnonzero(index.task_sub == s).tolist()
        room = list(count)
        # a stateless task stays where it ran while its client has room for it
        rest = []
        for t in tasks:
            owner = int(index.prev_active[t])
            if owner >= 0 and room[owner] > 0:
                active[t] = owner
                room[owner] -= 1
            else:
                rest.append(t)
        active[rest] = [j for j in range(index.client_count) for _ in range(room[j])]
    return StreamsTarget(active=active, standby=standby)
