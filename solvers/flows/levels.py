"""A min-cost flow with lexicographic objectives solved level by level, so that no level's weight
has to dominate the levels below it in one 64-bit cost.

One weighted sum needs weights that grow with the product of the levels' ranges (the Streams
active flow: about 4 x stateful^2 x tasks), and OR-Tools' cost scaling multiplies costs by the
node count: from about 50k tasks x 1,000 clients that passes 2^62. Here each level is solved on
its own costs, then the network is cut down to the flows optimal for it (complementary
slackness: with the level's node potentials, an arc of positive reduced cost carries nothing in
any optimal flow and one of negative reduced cost is full; the others are free), and the next
level is minimised over what is left. The result minimises the levels lexicographically, exactly
as the weighted sum would where it fits; its integer flows come from the last solve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ortools.graph.python import min_cost_flow
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from stickyd.solvers.errors import SolverFailure
from stickyd.solvers.flows.network import FlowNetwork, costs_fit

ROUNDS_BETWEEN_CHECKS = 32


def solve_by_levels(
    net: FlowNetwork, levels: Sequence[np.ndarray], between: Callable[[], None] = lambda: None
) -> np.ndarray:
    """Flows per arc (lower bounds included, as FlowNetwork.solve gives them) minimising
    levels[0] . flow, then levels[1] . flow among those flows, and so on; `levels[k]` holds a cost
    per arc, in the order the arcs were added. `between` is called between two solves (a budget
    check: it may raise)."""
    tails, heads, caps, supply_of = net.arrays()
    lower = net.lower_bounds()
    caps = caps.copy()
    supply = np.zeros(net.nodes, dtype=np.int64)
    for node, amount in supply_of.items():
        supply[node] += amount
    fixed = np.zeros(len(caps), dtype=np.int64)
    flow = np.zeros(len(caps), dtype=np.int64)
    for k, costs in enumerate(levels):
        flow = _min_cost_flow(net.nodes, tails, heads, caps, costs, supply)
        if k == len(levels) - 1:
            break
        between()
        distance = residual_distances(net.nodes, tails, heads, caps, costs, flow, between)
        reduced = costs + distance[tails] - distance[heads]
        full = reduced < 0
        # an arc that is full in every optimal flow: its flow moves into the supplies
        fixed[full] += caps[full]
        np.subtract.at(supply, tails[full], caps[full])
        np.add.at(supply, heads[full], caps[full])
        caps[full | (reduced > 0)] = 0
        between()
    return flow + fixed + lower


def _min_cost_flow(
    nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray, supply: np.ndarray
) -> np.ndarray:
    if len(costs) and not costs_fit(int(np.abs(costs).max()), nodes):
        raise SolverFailure("one level's costs overflow 64-bit flow costs")
    smcf = min_cost_flow.SimpleMinCostFlow()
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32), caps, costs)
    given = np.flatnonzero(supply)
    if len(given):
        smcf.set_nodes_supplies(given.astype(np.int32), supply[given])
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise SolverFailure(f"min-cost flow ended with status {status}")
    return np.asarray(smcf.flows(arcs), dtype=np.int64)


def residual_distances(
    nodes: int,
    tails: np.ndarray,
    heads: np.ndarray,
    caps: np.ndarray,
    costs: np.ndarray,
    flow: np.ndarray,
    between: Callable[[], None] = lambda: None,
) -> np.ndarray:
    """Shortest distances in the residual network of an optimal `flow` from a source joined to
    every node at cost 0 (Bellman-Ford, all arcs relaxed at once per round): minus the node
    potentials, so that `costs + d[tails] - d[heads]` are the reduced costs. An optimal flow's
    residual network has no negative cycle; one that does not settle raises SolverFailure.
    `between` is called every ROUNDS_BETWEEN_CHECKS rounds (the rounds are as many as the longest
    shortest path has arcs: a handful on the Streams network, up to the nodes in the worst case)."""
    forward, backward = flow < caps, flow > 0
    src = np.concatenate([tails[forward], heads[backward]])
    dst = np.concatenate([heads[forward], tails[backward]])
    weight = np.concatenate([costs[forward], -costs[backward]])
    order = np.argsort(dst, kind="stable")
    src, dst, weight = src[order], dst[order], weight[order]
    targets, starts = np.unique(dst, return_index=True)
    distance = np.zeros(nodes, dtype=np.int64)
    if not len(targets):
        return distance
    for round_ in range(nodes + 1):
        if round_ % ROUNDS_BETWEEN_CHECKS == ROUNDS_BETWEEN_CHECKS - 1:
            between()
        best = np.minimum.reduceat(distance[src] + weight, starts)
        improved = best < distance[targets]
        if not improved.any():
            return distance
        distance[targets[improved]] = best[improved]
    raise SolverFailure("the residual network of the level's flow has a negative cycle")


def fixed_arcs(
    net: FlowNetwork, levels: Sequence[np.ndarray], flow: np.ndarray, between: Callable[[], None] = lambda: None
) -> np.ndarray:
    """Per arc, whether it carries the same flow in *every* flow that minimises `levels`
    lexicographically, given one such `flow` (lower bounds included, as `solve_by_levels` gives
    it). Level by level: an arc of nonzero reduced cost under the level's node potentials is
    empty (positive) or full (negative) in every optimal flow, so it is held at `flow`'s value.
    The optimal flows then differ from `flow` by cycles of the residual network on the arcs left
    open (each of zero reduced cost, so of zero cost): an open arc at one of its bounds changes in
    some optimal flow exactly when its ends lie in one strongly connected component of that
    residual network (an arc strictly between its bounds is left open: it may still be held).
    The next level's potentials come from the arcs still open."""
    tails, heads, caps, _ = net.arrays()
    x = flow - net.lower_bounds()
    # (an arc whose lower bound is its capacity has nothing to change)
    fixed = caps == 0
    for costs in levels:
        # a held arc leaves the residual network in both directions
        distance = residual_distances(
            net.nodes, tails, heads, np.where(fixed, 0, caps), costs, np.where(fixed, 0, x), between
        )
        fixed |= costs + distance[tails] - distance[heads] != 0
        component = _residual_components(net.nodes, tails, heads, np.where(fixed, 0, caps), np.where(fixed, 0, x))
        # (an arc strictly between its bounds is connected by its own two residual arcs: left open)
        fixed |= (component[tails] != component[heads]) & ((x == 0) | (x == caps))
    return fixed


def _residual_components(nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, x: np.ndarray) -> Any:
    """Per node, its strongly connected component in the residual network of `x`."""
    forward, backward = x < caps, x > 0
    src = np.concatenate([tails[forward], heads[backward]])
    dst = np.concatenate([heads[forward], tails[backward]])
    graph = coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(nodes, nodes)).tocsr()
    return connected_components(graph, directed=True, connection="strong")[1]
