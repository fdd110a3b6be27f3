"""A small min-cost-flow builder with arc lower bounds, over OR-Tools' SimpleMinCostFlow.

Arcs are collected as numpy blocks and handed to OR-Tools in one call. A lower bound l on an
arc u -> v becomes capacity (cap - l), u supplying l less and v l more.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from ortools.graph.python import min_cost_flow

from stickyd.solvers.errors import SolverFailure

_MAX_COST = 2**62


def costs_fit(max_cost: int, nodes: int) -> bool:
    """Whether OR-Tools' 64-bit min-cost flow can take arc costs up to `max_cost` on `nodes` nodes
    (its cost scaling multiplies costs by about the node count)."""
    return max_cost * (nodes + 1) < _MAX_COST


class FlowNetwork:
    def __init__(self) -> None:
        self.nodes = 0
        self._tails: list[np.ndarray] = []
        self._heads: list[np.ndarray] = []
        self._caps: list[np.ndarray] = []
        self._costs: list[np.ndarray] = []
        self._lowers: list[np.ndarray] = []
        self._supply: dict[int, int] = {}
        self.arcs = 0

    def add_nodes(self, count: int) -> int:
        """Reserve `count` nodes; returns the first one's id."""
        first = self.nodes
        self.nodes += count
        return first

    def add_arcs(
        self,
        tails: npt.ArrayLike,
        heads: npt.ArrayLike,
        caps: npt.ArrayLike,
        costs: npt.ArrayLike,
        lower: npt.ArrayLike | None = None,
    ) -> slice:
        """Add arcs (broadcasting scalars); returns their positions in the flow vector."""
        raw = [np.asarray(a, dtype=np.int64) for a in (tails, heads, caps, costs)]
        # an empty block stays empty, whatever scalars it is broadcast with
        size = 0 if any(p.ndim and not p.size for p in raw) else max(p.size if p.ndim else 1 for p in raw)
        t, h, cap, cost = (
            p if p.ndim and p.size == size else np.full(size, p.reshape(-1)[0] if size else 0) for p in raw
        )
        if lower is None:
            low = np.zeros(size, np.int64)
        else:
            given = np.asarray(lower, np.int64)
            low = given if given.ndim and given.size == size else np.full(size, given.reshape(-1)[0] if size else 0)
            if low.any():
                cap = cap - low
                supply = self._supply
                for tail, head, amount in zip(t.tolist(), h.tolist(), low.tolist(), strict=True):
                    if amount:
                        supply[tail] = supply.get(tail, 0) - amount
                        supply[head] = supply.get(head, 0) + amount
        if size and int(cap.min()) < 0:
            raise SolverFailure("an arc's lower bound exceeds its capacity")
        self._tails.append(t)
        self._heads.append(h)
        self._caps.append(cap)
        self._costs.append(cost)
        self._lowers.append(low)
        start = self.arcs
        self.arcs += size
        return slice(start, self.arcs)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, int]]:
        """(tails, heads, capacities above the lower bounds, supplies with the lower bounds
        moved in): the network as a linear programme sees it (flow = x + lower bound)."""
        empty = np.zeros(0, np.int64)
        tails = np.concatenate(self._tails) if self._tails else empty
        heads = np.concatenate(self._heads) if self._heads else empty
        caps = np.concatenate(self._caps) if self._caps else empty
        return tails, heads, caps, dict(self._supply)

    def lower_bounds(self) -> np.ndarray:
        """per arc, in the order added: its lower bound (`solve`'s flows include it)."""
        return np.concatenate(self._lowers) if self._lowers else np.zeros(0, np.int64)

    def costs(self) -> np.ndarray:
        """per arc, in the order added: its unit cost."""
        return np.concatenate(self._costs) if self._costs else np.zeros(0, np.int64)

    def supply(self, node: int, amount: int) -> None:
        self._supply[node] = self._supply.get(node, 0) + int(amount)

    def solve(self) -> np.ndarray:
        """Flows per arc, in the order added (lower bounds included)."""
        tails = np.concatenate(self._tails) if self._tails else np.zeros(0, np.int64)
        heads = np.concatenate(self._heads) if self._heads else np.zeros(0, np.int64)
        caps = np.concatenate(self._caps) if self._caps else np.zeros(0, np.int64)
        costs = np.concatenate(self._costs) if self._costs else np.zeros(0, np.int64)
        if len(costs) and not costs_fit(int(np.abs(costs).max()), self.nodes):
            raise SolverFailure("objective weights overflow 64-bit flow costs")
        smcf = min_cost_flow.SimpleMinCostFlow()
        arcs = smcf.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32), caps, costs)
        if self._supply:
            nodes = np.fromiter(self._supply, dtype=np.int32)
            smcf.set_nodes_supplies(nodes, np.fromiter(self._supply.values(), dtype=np.int64))
        status = smcf.solve()
        if status != smcf.OPTIMAL:
            raise SolverFailure(f"min-cost flow ended with status {status}")
        return np.asarray(smcf.flows(arcs), dtype=np.int64) + np.concatenate(self._lowers)
