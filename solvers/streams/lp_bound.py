"""The standby level's certificate where the flow relaxations are too loose: a linear programme.

A client's stateful count is its stateful actives plus its standbys. The flow relaxations cannot
follow both the actives exactly (active and per-subtopology shares) and the stateful count
exactly, because a stateful active counts in both. A linear programme can: the chained flow
network (actives followed exactly, standbys free) plus, per client, its stateful actives plus
standbys within its stateful share (softly, the excess measured). Its optimum, level by level
(least excess, most kept actives, most kept standbys; each later level with the earlier ones
held at the answer's figures), bounds every target; integer answers meet it after rounding.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import optimize, sparse

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.streams.standby_bound import LevelWeights, StreamsBound, _network

LP_ARCS_LIMIT = 2_000_000
"""Beyond this many arcs the programme is not tried."""
LP_EXACT_COSTS = 10**6
"""With restore costs, the programme is tried only while the summed costs of every task's items
stay below this: HiGHS' tolerances are relative, and its figures are compared as integers."""

EPSILON = 1e-6


def lp_proves(index: StreamsIndex, answer: StreamsBound, seconds: float, proven: int = 0) -> bool:
    """Whether the linear programme shows `answer` optimal at every level (HiGHS, through
    SciPy); the first `proven` levels are known optimal already (they are only held)."""
    if index.replicas == 0 or seconds <= 0:
        return False
    if index.weighted and index.cost_of(index.stateful) * (1 + index.replicas) > LP_EXACT_COSTS:
        return False
    started = time.monotonic()
    net, rows = _network(
        index, LevelWeights.summed(index), chained=True, tied=True, allowed_excess=answer.stateful_excess, joint=True
    )
    tails, heads, caps, supply = net.arrays()
    if len(tails) > LP_ARCS_LIMIT or rows.stateful_actives is None or rows.standbys is None:
        return False
    n_arcs, n = len(tails), index.client_count
    size = n_arcs + n  # the flows, then each client's excess
    arcs = np.arange(n_arcs)
    # flow conservation: what leaves a node minus what enters it is its supply
    conservation = sparse.csr_matrix(
        (np.concatenate([np.ones(n_arcs), -np.ones(n_arcs)]), (np.concatenate([tails, heads]), np.tile(arcs, 2))),
        shape=(net.nodes, size),
    )
    supplies = np.zeros(net.nodes)
    supplies[list(supply)] = list(supply.values())
    # per client: stateful actives + standbys within the stateful share, the excess measured:
    # lo - count - excess <= 0 and count - excess <= hi
    clients = np.arange(n)
    sa = np.arange(rows.stateful_actives.start, rows.stateful_actives.stop)
    sb = np.arange(rows.standbys.start, rows.standbys.stop)
    cols = np.concatenate([sa, sb, n_arcs + clients])
    share_rows = sparse.vstack(
        [
            sparse.csr_matrix((-np.ones(3 * n), (np.tile(clients, 3), cols)), shape=(n, size)),
            sparse.csr_matrix(
                (np.concatenate([np.ones(2 * n), -np.ones(n)]), (np.tile(clients, 3), cols)), shape=(n, size)
            ),
        ]
    )
    lo, hi = index.stateful_bounds()
    limits = [share_rows]
    limit_values = [np.concatenate([-lo, hi]).astype(np.float64)]
    bounds = np.stack([np.zeros(size), np.concatenate([caps.astype(np.float64), np.full(n, np.inf)])], axis=1)

    excess = np.zeros(size)
    excess[n_arcs + clients] = 1.0
    # least excess, most kept actives, most kept standbys (kept items weighed by restore cost)
    kept_standbys = rows.previous - answer.standby_moves
    levels = (
        (excess, answer.stateful_excess),
        (-_weighed(size, rows.kept, rows.kept_weight), -answer.kept_actives),
        (-_weighed(size, rows.standby, rows.standby_weight), -kept_standbys),
    )
    for level, (objective, reached) in enumerate(levels):
        if level < proven:
            limits.append(sparse.csr_matrix(objective.reshape(1, -1)))
            limit_values.append(np.array([float(reached)]))
            continue
        left = seconds - (time.monotonic() - started)
        if left <= 0:
            return False
        result = optimize.linprog(
            objective,
            A_ub=sparse.vstack(limits),
            b_ub=np.concatenate(limit_values),
            A_eq=conservation,
            b_eq=supplies,
            bounds=bounds,
            method="highs",
            options={"time_limit": left},
        )
        # the integer answer meets the programme's bound after rounding
        if result.status != 0 or math.ceil(result.fun - EPSILON) != reached:
            return False
        # the next level holds this one at the answer's figure
        limits.append(sparse.csr_matrix(objective.reshape(1, -1)))
        limit_values.append(np.array([float(reached)]))
    return True


def _weighed(size: int, slices: list[slice], weights: list[np.ndarray]) -> np.ndarray:
    """An objective over the programme's `size` columns: per arc of `slices`, what a unit on it
    weighs (its task's restore cost, 1 where moves are counted)."""
    vector = np.zeros(size)
    if slices:
        columns = np.concatenate([np.arange(r.start, r.stop) for r in slices])
        vector[columns] = np.concatenate(weights).astype(np.float64)
    return vector
