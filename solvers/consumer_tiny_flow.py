"""solvers.consumer_flow's network for a tiny group of plain topics, built from lists.

With plain topics (one unit per partition, no racks), every member's units weigh one partition,
no class has two claimants, and the rack level is empty, so the general network is: pools (one per
topic with partitions, node k), members (node pools + m), the sink; a claimant supplies its
claimed partitions of a topic and may give them back to the topic's pool at cost 1 (a move); a
pool sends to each reader at cost 0; members reach the sink through solvers.convex_loads' arcs
(balance weight: claimed partitions + 1, so balance outweighs moves). The arcs are added in the
general path's order (given-back arcs class by class, then pools' arcs reader by reader, then the
load arcs: below-window segments, unit arcs, above-window segments, member by member), so OR-Tools
solves the same problem and returns the same flows.
"""

from __future__ import annotations

import time

from ortools.graph.python import min_cost_flow

from solvers.consumer_tiny_index import TinyIndex

MAX_COST = 2**62
MAX_ROUNDS = 40
Arcs = tuple[list[int], list[int], list[int], list[int]]
"""tails, heads, capacities, unit costs."""


def flow_owners(index: TinyIndex, deadline: float) -> list[list[int]] | None:
    """Owners per topic (index.names order), or None when the deadline passed, the costs would
    overflow or the windows did not settle (the general path then answers, or falls back)."""
    pools = [t for t in index.names if index.topics[t] > 0]
    n = len(index.members)
    member0, sink = len(pools), len(pools) + n
    capacity = [0] * n
    supplies = [0] * (sink + 1)
    given_back: Arcs = ([], [], [], [])
    single: list[tuple[int, int, list[int]]] = []
    """per claimed class, (topic, claimant, its partitions ascending)."""
    free_units: list[list[int]] = []
    """per pool: partitions nobody claims (or whose claimant cannot read the topic), ascending."""
    for k, topic in enumerate(pools):
        readers = index.reader_set[topic]
        for m in index.readers[topic]:
            capacity[m] += index.topics[topic]
        by_claimant: dict[int, list[int]] = {}
        for p, claimant in enumerate(index.claims[topic]):
            by_claimant.setdefault(claimant, []).append(p)
        free_units.append([])
        for claimant in sorted(by_claimant):
            units = by_claimant[claimant]
            if claimant >= 0 and claimant in readers:
                single.append((k, claimant, units))
                _arc(given_back, member0 + claimant, k, len(units), 1)
                supplies[member0 + claimant] += len(units)
            else:
                free_units[k] += units
                supplies[k] += len(units)
    pooled: Arcs = ([], [], [], [])
    for k, topic in enumerate(pools):
        for m in index.readers[topic]:
            _arc(pooled, k, member0 + m, index.topics[topic], 0)
    total = sum(index.topics[t] for t in pools)
    supplies[sink] = -total
    balance = index.owned + 1
    fixed = tuple(a + b for a, b in zip(given_back, pooled, strict=True))
    lo, hi = [0] * n, capacity
    share = total / max(1, sum(1 for c in capacity if c > 0))
    center = [min(max(round(share), lo[m]), hi[m]) for m in range(n)]
    a = [max(center[m] - 1, lo[m]) for m in range(n)]
    b = [min(center[m] + 1, hi[m]) for m in range(n)]
    bits = max(h - low for h, low in zip(hi, lo, strict=True)).bit_length() + 1
    for _ in range(MAX_ROUNDS):
        if time.monotonic() > deadline:
            return None
        load = _load_arcs(lo, hi, a, b, bits, member0, sink, balance)
        flows = _run(fixed, load, supplies, sink)  # type: ignore[arg-type]
        if flows is None:
            return None
        units = list(lo)
        for tail, flow in zip(load[0], flows[len(fixed[0]) :], strict=True):
            units[tail - member0] += flow
        done = [_settled(units[m], lo[m], hi[m], a[m], b[m]) for m in range(n)]
        if all(done):
            return _deal(index, pools, single, free_units, pooled, flows[: len(fixed[0])], member0)
        for m in range(n):
            x = units[m]
            reach = 2 if done[m] else 2 * max(a[m] - x, x - b[m], 2)
            a[m], b[m] = max(lo[m], min(a[m], x - reach)), min(hi[m], max(b[m], x + reach))
    return None


def _arc(arcs: Arcs, tail: int, head: int, capacity: int, cost: int) -> None:
    arcs[0].append(tail)
    arcs[1].append(head)
    arcs[2].append(capacity)
    arcs[3].append(cost)


def _load_arcs(
    lo: list[int], hi: list[int], a: list[int], b: list[int], bits: int, member0: int, sink: int, balance: int
) -> Arcs:
    """solvers.convex_loads.load_segments' arcs, costed as ConsumerFlowModel._load_arcs (unit weight 1)."""
    arcs: Arcs = ([], [], [], [])
    n = len(lo)
    for m in range(n):  # below the window: widest segment first, each charging its top unit
        for j in range(bits - 1, -1, -1):
            step = 1 << j
            top = a[m] - (step - 1)
            width = top - max(a[m] - (2 * step - 1), lo[m])
            if width > 0:
                _arc(arcs, member0 + m, sink, width, balance * (2 * top - 1))
    for m in range(n):  # inside: one arc per unit
        for k in range(a[m] + 1, b[m] + 1):
            _arc(arcs, member0 + m, sink, 1, balance * (2 * k - 1))
    for m in range(n):  # above: narrowest segment first, each charging its bottom unit
        for j in range(bits):
            step = 1 << j
            start = b[m] + step - 1
            width = min(b[m] + 2 * step - 1, hi[m]) - start
            if width > 0:
                _arc(arcs, member0 + m, sink, width, balance * (2 * (start + 1) - 1))
    return arcs


def _run(fixed: Arcs, load: Arcs, supplies: list[int], sink: int) -> list[int] | None:
    tails, heads, capacities, costs = (f + x for f, x in zip(fixed, load, strict=True))
    if costs and max(abs(c) for c in costs) * (sink + 2) >= MAX_COST:
        return None
    flow = min_cost_flow.SimpleMinCostFlow()
    arcs = flow.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)
    flow.set_nodes_supplies(list(range(sink + 1)), supplies)
    if flow.solve() != flow.OPTIMAL:
        return None
    flows: list[int] = flow.flows(arcs).tolist()
    return flows


def _charged(unit: int, a: int, b: int) -> int:
    """solvers.convex_loads.charged for one member."""
    if unit <= a:
        return a - ((1 << ((a - unit + 1).bit_length() - 1)) - 1)
    if unit > b:
        return b + (1 << ((unit - b).bit_length() - 1))
    return unit


def _settled(x: int, lo: int, hi: int, a: int, b: int) -> bool:
    """solvers.convex_loads.settled for one member."""
    more = x >= hi or _charged(min(x + 1, hi), a, b) <= x + 1
    fewer = x <= lo or _charged(max(x, lo + 1), a, b) >= x
    return more and fewer


def _deal(
    index: TinyIndex,
    pools: list[str],
    single: list[tuple[int, int, list[int]]],
    free_units: list[list[int]],
    pooled: Arcs,
    routing_flows: list[int],
    member0: int,
) -> list[list[int]] | None:
    """solvers.consumer_classes.materialize: a claimant keeps its class's lowest partitions; each
    pool's other partitions (ascending) are dealt to the pool's arcs' members in id order."""
    owner = {t: [-1] * index.topics[t] for t in pools}
    left = [list(units) for units in free_units]
    for (k, claimant, units), back in zip(single, routing_flows, strict=False):
        keep = len(units) - back
        for p in units[:keep]:
            owner[pools[k]][p] = claimant
        left[k] += units[keep:]
    for units in left:
        units.sort()
    taken = [0] * len(pools)
    for k, m, flow in zip(pooled[0], pooled[1], routing_flows[len(single) :], strict=True):
        for p in left[k][taken[k] : taken[k] + flow]:
            owner[pools[k]][p] = m - member0
        taken[k] += flow
    if any(o < 0 for t in pools for o in owner[t]):
        return None
    return [owner.get(t, []) for t in index.names]
