"""stickyd.solvers.consumer.flow's network for a tiny group of plain topics, built from lists.

With plain topics (one unit per partition, no racks), every member's units weigh one partition,
no class has two claimants, and the rack level is empty, so the general network is: pools (one per
topic with partitions, node k), members (node pools + m), the sink; a claimant supplies its
claimed partitions of a topic and may give them back to the topic's pool at cost 1 (a move); a
pool sends to each reader at cost 0; members reach the sink through stickyd.solvers.flows.convex_loads' arcs
(balance weight: claimed partitions + 1, so balance outweighs moves). The arcs are added in the
general path's order (given-back arcs class by class, then pools' arcs reader by reader, then the
load arcs: below-window segments, unit arcs, above-window segments, member by member), so OR-Tools
solves the same problem and returns the same flows.
"""

from __future__ import annotations

import time

from ortools.graph.python import min_cost_flow

from stickyd.solvers.consumer.small.index import TinyIndex

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
    single: list[tuple[int, int, list[int]]] = []
    """per claimed class, (pool, claimant, its partitions ascending): its given-back arc's order."""
    free_units: list[list[int]] = []
    """per pool: partitions nobody claims (or whose claimant cannot read the topic), ascending."""
    for k, topic in enumerate(pools):
        count = index.topics[topic]
        for m in index.readers[topic]:
            capacity[m] += count
        claims = index.claims[topic]
        if claims.count(-1) == count:  # nobody claims this topic
            free_units.append(list(range(count)))
            supplies[k] += count
            continue
        by_claimant: dict[int, list[int]] = {}
        for p, claimant in enumerate(claims):
            by_claimant.setdefault(claimant, []).append(p)
        free: list[int] = []
        readers = index.reader_set[topic]
        for claimant in sorted(by_claimant):
            units = by_claimant[claimant]
            if claimant >= 0 and claimant in readers:
                single.append((k, claimant, units))
                supplies[member0 + claimant] += len(units)
            else:
                free += units
                supplies[k] += len(units)
        free_units.append(free)
    # a claimant may give its units back to the pool (cost 1: a move); a pool feeds its readers
    pooled = [(k, member0 + m, index.topics[topic]) for k, topic in enumerate(pools) for m in index.readers[topic]]
    fixed: Arcs = (
        [member0 + m for _, m, _ in single] + [a[0] for a in pooled],
        [k for k, _, _ in single] + [a[1] for a in pooled],
        [len(units) for _, _, units in single] + [a[2] for a in pooled],
        [1] * len(single) + [0] * len(pooled),
    )
    total = sum(index.topics[t] for t in pools)
    supplies[sink] = -total
    balance = index.owned + 1
    lo, hi = [0] * n, capacity
    share = total / max(1, sum(1 for c in capacity if c > 0))
    center = [min(max(round(share), lo[m]), hi[m]) for m in range(n)]
    a = [max(center[m] - 1, lo[m]) for m in range(n)]
    b = [min(center[m] + 1, hi[m]) for m in range(n)]
    for _ in range(MAX_ROUNDS):
        if time.monotonic() > deadline:
            return None
        load = _load_arcs(lo, hi, a, b, member0, sink, balance)
        flows = _run(fixed, load, supplies, sink)
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


def _load_arcs(lo: list[int], hi: list[int], a: list[int], b: list[int], member0: int, sink: int, balance: int) -> Arcs:
    """stickyd.solvers.flows.convex_loads.load_segments' arcs, costed as ConsumerFlowModel._load_arcs (unit
    weight 1): (tail, capacity, k) per arc, k the unit whose marginal (2k - 1) it charges."""
    below: list[tuple[int, int, int]] = []
    inside: list[tuple[int, int, int]] = []
    above: list[tuple[int, int, int]] = []
    for m in range(len(lo)):
        tail = member0 + m
        # below the window: segments (a - (2s - 1), a - (s - 1)] cut at lo, widest first, each
        # charging its top unit; one exists for each power of two s <= a - lo
        for j in range((a[m] - lo[m]).bit_length() - 1, -1, -1):
            top = a[m] - (1 << j) + 1
            below.append((tail, top - max(a[m] - (2 << j) + 1, lo[m]), top))
        inside += [(tail, 1, k) for k in range(a[m] + 1, b[m] + 1)]
        # above: segments (b + s - 1, b + 2s - 1] cut at hi, narrowest first, each charging its
        # bottom unit; one for each power of two s <= hi - b
        for j in range((hi[m] - b[m]).bit_length()):
            start = b[m] + (1 << j) - 1
            above.append((tail, min(b[m] + (2 << j) - 1, hi[m]) - start, start + 1))
    arcs = below + inside + above
    return (
        [arc[0] for arc in arcs],
        [sink] * len(arcs),
        [arc[1] for arc in arcs],
        [balance * (2 * arc[2] - 1) for arc in arcs],
    )


def _run(fixed: Arcs, load: Arcs, supplies: list[int], sink: int) -> list[int] | None:
    tails, heads, capacities, costs = (f + x for f, x in zip(fixed, load, strict=True))
    if costs and max(map(abs, costs)) * (sink + 2) >= MAX_COST:
        return None
    flow = min_cost_flow.SimpleMinCostFlow()
    arcs = flow.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)
    flow.set_nodes_supplies(list(range(sink + 1)), supplies)
    if flow.solve() != flow.OPTIMAL:
        return None
    flows: list[int] = flow.flows(arcs).tolist()
    return flows


def _charged(unit: int, a: int, b: int) -> int:
    """stickyd.solvers.flows.convex_loads.charged for one member."""
    if unit <= a:
        return a - ((1 << ((a - unit + 1).bit_length() - 1)) - 1)
    if unit > b:
        return b + (1 << ((unit - b).bit_length() - 1))
    return unit


def _settled(x: int, lo: int, hi: int, a: int, b: int) -> bool:
    """stickyd.solvers.flows.convex_loads.settled for one member."""
    more = x >= hi or _charged(min(x + 1, hi), a, b) <= x + 1
    fewer = x <= lo or _charged(max(x, lo + 1), a, b) >= x
    return more and fewer


def _deal(
    index: TinyIndex,
    pools: list[str],
    single: list[tuple[int, int, list[int]]],
    free_units: list[list[int]],
    pooled: list[tuple[int, int, int]],
    routing_flows: list[int],
    member0: int,
) -> list[list[int]] | None:
    """stickyd.solvers.consumer.classes.materialize: a claimant keeps its class's lowest partitions; each
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
    for (k, m, _), flow in zip(pooled, routing_flows[len(single) :], strict=True):
        for p in left[k][taken[k] : taken[k] + flow]:
            owner[pools[k]][p] = m - member0
        taken[k] += flow
    if any(o < 0 for t in pools for o in owner[t]):
        return None
    return [owner.get(t, []) for t in index.names]
