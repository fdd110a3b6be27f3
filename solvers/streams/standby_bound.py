"""A lower bound on standby moves over every balanced Streams target with a given number of
kept actives: the certificate that proves the standby level.

The two flows place actives first and standbys given those actives, which alone proves nothing
about the standby level over *all* targets with minimal active moves. This relaxation looks at
every such target at once. Each stateful task brings 1 + replicas items (its active and its
standbys); an item either stays where the task's state was (its previous active owner keeps the
active, or a previous standby client keeps holding the task, as a standby or as its promoted
active) or is placed fresh on any client. Every client's items stay within its stateful share,
kept actives within its active and per-subtopology shares, and no client holds two items of one
task that it held before. Maximising kept actives first, then kept standbys, bounds what any
real target can keep. Above both sits the balance: where a client's stateful share exceeds the
tasks there are (one item per task and client), no target meets every share, and the least
total excess of the relaxation bounds every target's. A target that reaches the relaxation's
figures level by level (its excess, then its kept actives, then its standby moves) is proven
optimal at each.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.errors import SolverFailure
from stickyd.solvers.flows.levels import solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork

BoundClass = tuple[int, int, frozenset[int], int]
"""(subtopology, previous active owner or -1, previous standby clients, restore cost)."""


@dataclass(frozen=True)
class StreamsBound:
    """What no target can beat, level by level (each given the levels above)."""

    stateful_excess: int
    """the least total excess of stateful counts over the shares (0: all balances can be met)."""
    kept_actives: int
    """the most stateful actives kept by their previous owner (with restore costs: the most of
    their summed costs)."""
    standby_moves: int
    """the fewest standby moves (with restore costs: the least of their summed costs)."""


@dataclass(frozen=True)
class LevelWeights:
    """What a relaxation's arcs weigh per unit: kept standbys and kept actives (times the task's
    restore cost, 1 where moves are counted), units of stateful excess."""

    keep_standby: int
    keep_active: int
    excess: int

    @classmethod
    def summed(cls, index: StreamsIndex) -> LevelWeights:
        """The three levels in one cost: one kept active outweighs every kept standby, one unit
        of excess every kept item."""
        tasks = index.stateful
        previous = index.cost_of(index.standby_pairs[tasks[index.standby_pairs[:, 0]], 0])
        keep_active = previous + 1
        return cls(keep_standby=1, keep_active=keep_active, excess=keep_active * (index.cost_of(tasks) + 1))


LEVELS = (LevelWeights(0, 0, 1), LevelWeights(0, 1, 0), LevelWeights(1, 0, 0))
"""The three levels one at a time, highest first (solved by solvers/flows/levels.py)."""


def streams_bounds(index: StreamsIndex) -> Iterator[StreamsBound]:
    """Relaxations of every target, each solved lexicographically (least stateful excess, most
    kept actives, most kept standbys), cheapest first: `pooled` counts each client's stateful
    items exactly but knows its stateful actives only within the per-subtopology shares;
    `chained` follows the actives exactly and bounds each client's standbys by what its actives
    leave of its share. `tied` keeps a task's promoted active and kept standby on one client
    from both counting (at the price of letting a standby turn into an active there). A target
    proven by the relaxations at every level is optimal."""
    if not index.stateful.any():
        yield StreamsBound(0, 0, 0)
        return
    try:
        pooled = _solve(index, chained=False, tied=False, allowed_excess=0)
    except SolverFailure:
        return  # restore costs too large for 64-bit flow costs: these relaxations bound nothing
    yield pooled
    if index.replicas == 0 or pooled.stateful_excess == 0:
        for tied in (True, False):
            try:
                chained = _solve(index, chained=True, tied=tied, allowed_excess=pooled.stateful_excess)
            except SolverFailure:
                continue  # the chained relaxation's standby ranges admit nothing: it bounds nothing
            yield chained
    try:
        yield _solve(index, chained=False, tied=True, allowed_excess=0)
    except SolverFailure:
        return


def _solve(index: StreamsIndex, *, chained: bool, tied: bool, allowed_excess: int) -> StreamsBound:
    """The relaxation's optimum, level by level: as one weighted sum where moves are counted,
    one level after the other where restore costs weigh them (their sums may pass 64 bits)."""

    def build(weights: LevelWeights) -> tuple[FlowNetwork, NetworkRows]:
        return _network(index, weights, chained=chained, tied=tied, allowed_excess=allowed_excess, joint=False)

    if not index.weighted:
        net, rows = build(LevelWeights.summed(index))
        flows = net.solve()
    else:
        built = [build(weights) for weights in LEVELS]
        net, rows = built[0]
        flows = solve_by_levels(net, [level.costs() for level, _ in built])
    lo_f, hi_f = index.stateful_bounds()
    held = sum(flows[r] for r in rows.shares) if rows.shares else None
    return StreamsBound(
        stateful_excess=(
            allowed_excess if held is None else int(np.maximum(lo_f - held, 0).sum() + np.maximum(held - hi_f, 0).sum())
        ),
        kept_actives=_weighed(flows, rows.kept, rows.kept_weight),
        standby_moves=rows.previous - _weighed(flows, rows.standby, rows.standby_weight),
    )


def _weighed(flows: np.ndarray, rows: list[slice], weights: list[np.ndarray]) -> int:
    """The flows on `rows`, each unit weighing its arc's weight, summed exactly."""
    return sum(
        sum(f * x for f, x in zip(flows[r].tolist(), w.tolist(), strict=True))
        for r, w in zip(rows, weights, strict=True)
    )


@dataclass(frozen=True)
class NetworkRows:
    """Where a relaxation's quantities sit in its flow vector."""

    previous: int
    """the previous standby replicas (with restore costs: their summed costs)."""
    kept: list[slice]
    standby: list[slice]
    shares: list[slice]
    kept_weight: list[np.ndarray]
    """per arc of `kept`: the restore cost of the active it keeps (1 where moves are counted)."""
    standby_weight: list[np.ndarray]
    """per arc of `standby`: the restore cost of the standby it keeps."""
    stateful_actives: slice | None
    """per client, its stateful actives (chained, joint)."""
    standbys: slice | None
    """per client, its standbys (chained, joint)."""


@dataclass(frozen=True)
class _Nodes:
    """The relaxation's nodes: per class of stateful tasks its actives and standbys, the fresh
    actives per subtopology and the fresh standbys, per (subtopology, client), per client its
    actives, their split and its state, and the sink."""

    active_of0: int
    standby_of0: int
    fresh_active0: int
    fresh_standby: int
    sub_client0: int
    active0: int
    split0: int
    state0: int
    sink: int

    @classmethod
    def add(cls, net: FlowNetwork, classes: int, n_subs: int, n: int) -> _Nodes:
        return cls(
            net.add_nodes(classes),
            net.add_nodes(classes),
            net.add_nodes(n_subs),
            net.add_nodes(1),
            net.add_nodes(n_subs * n),
            net.add_nodes(n),
            net.add_nodes(n),
            net.add_nodes(n),
            net.add_nodes(1),
        )


def _network(
    index: StreamsIndex, weights: LevelWeights, *, chained: bool, tied: bool, allowed_excess: int, joint: bool
) -> tuple[FlowNetwork, NetworkRows]:
    """The relaxation as a flow network, its arcs costed by `weights`. `joint` (chained, with
    standbys): each client's standbys are left free (0 to the task count), for a linear
    programme to tie them to its stateful actives."""
    tasks = np.flatnonzero(index.stateful).tolist()
    previous = index.cost_of(index.standby_pairs[index.stateful[index.standby_pairs[:, 0]], 0])
    sizes: dict[BoundClass, int] = {}
    cost = index.move_cost.tolist()
    for t in tasks:
        key = (int(index.task_sub[t]), int(index.prev_active[t]), index.prev_standby[t], cost[t])
        sizes[key] = sizes.get(key, 0) + 1
    n_subs = len(index.subtopologies)
    net = FlowNetwork()
    nodes = _Nodes.add(net, len(sizes), n_subs, index.client_count)
    kept_rows, standby_rows, kept_weight, standby_weight = _class_arcs(net, nodes, index, sizes, weights, tied)
    stateful_sub = np.array([bool(index.stateful[index.task_sub == s].any()) for s in range(n_subs)], dtype=bool)
    sub_shares = _subtopology_arcs(net, nodes, index, stateful_sub, chained)
    excess = weights.excess
    if chained:
        shares, sa_rows, sb_rows = _chained_client_arcs(net, nodes, index, sub_shares, allowed_excess, joint, excess)
    else:
        shares, sa_rows, sb_rows = _client_arcs(net, nodes, index, sub_shares, excess), None, None
    net.supply(nodes.sink, -(len(tasks) * (1 + index.replicas) + int((~index.stateful).sum())))
    rows = NetworkRows(previous, kept_rows, standby_rows, shares, kept_weight, standby_weight, sa_rows, sb_rows)
    return net, rows


def _class_arcs(
    net: FlowNetwork,
    nodes: _Nodes,
    index: StreamsIndex,
    sizes: dict[BoundClass, int],
    weights: LevelWeights,
    tied: bool,
) -> tuple[list[slice], list[slice], list[np.ndarray], list[np.ndarray]]:
    """A class's actives and standbys: kept by their previous clients, or placed fresh. The rows of
    the kept actives and of the kept standbys, and what each of their units weighs."""
    n, r = index.client_count, index.replicas
    keys = list(sizes)
    restore = np.array([k[3] for k in keys], dtype=np.int64)
    keep_standby = weights.keep_standby * restore
    keep_active = weights.keep_active * restore
    size = np.fromiter(sizes.values(), dtype=np.int64, count=len(keys))
    sub = np.array([k[0] for k in keys], dtype=np.int64)
    owner = np.array([k[1] for k in keys], dtype=np.int64)
    classes = np.arange(len(keys))
    # a class's tasks bring `size` actives and `size * replicas` standbys
    for c, amount in enumerate(size.tolist()):
        net.supply(nodes.active_of0 + c, amount)
        net.supply(nodes.standby_of0 + c, amount * r)
    owned = owner >= 0
    # the previous owner keeps the task's active ...
    kept_rows = [
        net.add_arcs(
            nodes.active_of0 + classes[owned],
            nodes.sub_client0 + sub[owned] * n + owner[owned],
            size[owned],
            -keep_active[owned],
        )
    ]
    kept_weight = [restore[owned]]
    # ... or the active goes anywhere within the subtopology's shares
    net.add_arcs(nodes.active_of0 + classes, nodes.fresh_active0 + sub, size, 0)
    # any standby may be placed fresh
    net.add_arcs(nodes.standby_of0 + classes, nodes.fresh_standby, size * r, 0)
    pairs = np.array([(c, j) for c, k in enumerate(keys) for j in sorted(k[2])], dtype=np.int64).reshape(-1, 2)
    pc, pj = pairs[:, 0], pairs[:, 1]
    standby_rows: list[slice] = []
    # a previous standby client keeps holding the task, as a standby or as its promoted
    # active: once per task and client when `tied` (but then a standby may turn into an
    # active there), else the two roles are not tied to distinct tasks
    if tied:
        keep_in, keep_out = net.add_nodes(len(pairs)), net.add_nodes(len(pairs))
        slots = np.arange(len(pairs))
        net.add_arcs(nodes.active_of0 + pc, keep_in + slots, size[pc], 0)
        net.add_arcs(nodes.standby_of0 + pc, keep_in + slots, size[pc] * (r > 0), 0)
        standby_rows.append(net.add_arcs(keep_in + slots, keep_out + slots, size[pc], -keep_standby[pc]))
        standby_weight = [restore[pc]]
        net.add_arcs(keep_out + slots, nodes.state0 + pj, size[pc] * (r > 0), 0)
        net.add_arcs(keep_out + slots, nodes.sub_client0 + sub[pc] * n + pj, size[pc], 0)
    else:
        standby_rows.append(
            net.add_arcs(nodes.standby_of0 + pc, nodes.state0 + pj, size[pc] * (r > 0), -keep_standby[pc])
        )
        standby_rows.append(
            net.add_arcs(nodes.active_of0 + pc, nodes.sub_client0 + sub[pc] * n + pj, size[pc], -keep_standby[pc])
        )
        standby_weight = [restore[pc], restore[pc]]
    return kept_rows, standby_rows, kept_weight, standby_weight


@dataclass(frozen=True)
class _SubtopologyShares:
    """Per client, the sums of its per-subtopology share bounds: over the stateful subtopologies
    and over the stateless ones."""

    stateful_lo: np.ndarray
    stateful_hi: np.ndarray
    stateless_lo: np.ndarray
    stateless_hi: np.ndarray


def _subtopology_arcs(
    net: FlowNetwork, nodes: _Nodes, index: StreamsIndex, stateful_sub: np.ndarray, chained: bool
) -> _SubtopologyShares:
    n = index.client_count
    clients = np.arange(n)
    sf_lo, sf_hi, sl_lo, sl_hi = (np.zeros(n, dtype=np.int64) for _ in range(4))
    for s in range(len(index.subtopologies)):
        stateless = int((index.task_sub == s).sum()) if not stateful_sub[s] else 0
        net.supply(nodes.fresh_active0 + s, stateless)
        lo, hi = index.subtopology_bounds(s)
        net.add_arcs(nodes.fresh_active0 + s, nodes.sub_client0 + s * n + clients, hi, 0)
        # every client's share of the subtopology's actives (stateful ones counted apart when chained)
        into = nodes.split0 if chained and stateful_sub[s] else nodes.active0
        net.add_arcs(nodes.sub_client0 + s * n + clients, into + clients, hi, 0, lower=lo)
        if stateful_sub[s]:
            sf_lo, sf_hi = sf_lo + lo, sf_hi + hi
        else:
            sl_lo, sl_hi = sl_lo + lo, sl_hi + hi
    return _SubtopologyShares(sf_lo, sf_hi, sl_lo, sl_hi)


def _chained_client_arcs(
    net: FlowNetwork,
    nodes: _Nodes,
    index: StreamsIndex,
    sub_shares: _SubtopologyShares,
    allowed_excess: int,
    joint: bool,
    excess: int,
) -> tuple[list[slice], slice | None, slice | None]:
    """Chained: a client's stateful actives, then all its actives, within their shares; then its
    standbys. The soft shares' rows, and (joint) the rows of its stateful actives and standbys."""
    clients = np.arange(index.client_count)
    lo_a, hi_a = index.active_bounds()
    lo_f, hi_f = index.stateful_bounds()
    most = int(index.stateful.sum())
    shares: list[slice] = []
    sa_rows: slice | None = None
    sb_rows: slice | None = None
    r = index.replicas
    soft = nodes.split0 if r == 0 else None
    # a client's stateful actives, then all its actives, within their shares
    if soft is None:
        sa_rows = net.add_arcs(
            nodes.split0 + clients, nodes.active0 + clients, np.minimum(hi_f + allowed_excess, most), 0
        )
    net.add_arcs(nodes.active0 + clients, nodes.sink, hi_a, 0, lower=lo_a)
    if soft is not None:
        shares = _soft_shares(net, nodes.split0 + clients, nodes.active0 + clients, lo_f, hi_f, most, excess)
    elif joint:
        net.add_arcs(nodes.fresh_standby, nodes.state0 + clients, most * r, 0)
        sb_rows = net.add_arcs(nodes.state0 + clients, nodes.sink, most, 0)
    else:
        # its standbys: what its actives leave of its stateful share (any target with the
        # least excess lies within that excess of every share)
        top_sa = np.minimum(np.minimum(sub_shares.stateful_hi, hi_a), hi_f + allowed_excess)
        low_sa = np.maximum(np.maximum(sub_shares.stateful_lo, lo_a - sub_shares.stateless_hi), 0)
        low = np.clip(lo_f - allowed_excess - top_sa, 0, most)
        high = np.clip(hi_f + allowed_excess - low_sa, low, most)
        net.add_arcs(nodes.fresh_standby, nodes.state0 + clients, most * r, 0)
        net.add_arcs(nodes.state0 + clients, nodes.sink, high, 0, lower=low)
    return shares, sa_rows, sb_rows


def _client_arcs(
    net: FlowNetwork, nodes: _Nodes, index: StreamsIndex, sub_shares: _SubtopologyShares, excess: int
) -> list[slice]:
    """Not chained: every client's share of all actives, its stateful actives and standbys within
    its stateful share, softly. The soft shares' rows."""
    clients = np.arange(index.client_count)
    lo_a, hi_a = index.active_bounds()
    lo_f, hi_f = index.stateful_bounds()
    most = int(index.stateful.sum())
    # every client's share of all actives
    net.add_arcs(nodes.active0 + clients, nodes.split0 + clients, hi_a, 0, lower=lo_a)
    # stateful actives count in the client's stateful share (the split between stateful and
    # stateless actives is only known within the per-subtopology shares)
    net.add_arcs(
        nodes.split0 + clients, nodes.state0 + clients, sub_shares.stateful_hi, 0, lower=sub_shares.stateful_lo
    )
    net.add_arcs(nodes.split0 + clients, nodes.sink, sub_shares.stateless_hi, 0, lower=sub_shares.stateless_lo)
    net.add_arcs(nodes.fresh_standby, nodes.state0 + clients, most * index.replicas, 0)
    return _soft_shares(net, nodes.state0 + clients, np.full(index.client_count, nodes.sink), lo_f, hi_f, most, excess)


def _soft_shares(
    net: FlowNetwork, tails: np.ndarray, heads: np.ndarray, lo: np.ndarray, hi: np.ndarray, most: int, excess: int
) -> list[slice]:
    """Each client's stateful count within its share, softly (every unit outside costs
    `excess`): a client holds a task once at most, so a share above the task count cannot be met."""
    low, high = np.minimum(lo, most), np.minimum(hi, most)
    return [
        net.add_arcs(tails, heads, low, -excess),
        net.add_arcs(tails, heads, high - low, 0),
        net.add_arcs(tails, heads, most - high, excess),
    ]
