"""A tie-break below every Streams level: new standby replicas go where their state already is.

A standby replica on a client that did not hold one of its task before is built there from the
task's changelog, less what that client still has on disk: Kafka Streams keeps the state
directory of a task it gave away (for `state.cleanup.delay.ms`, 10 minutes by default) and its
members report how far each local state reached, which the request carries as `lags`. Every
level of docs/wire-format.md is decided before this runs; among targets equal on all of them,
this moves the target's new replicas between the clients that take them so that the least state
is rebuilt:

- each client keeps as many new replicas as the target gave it (its stateful count is unchanged);
- the actives and the kept previous standby replicas stay, and no new replica goes to a previous
  standby client (both stickiness levels are unchanged);
- standbys on their active's rack (KIP-925) never grow: that tie-break stays above this one;
- a client's restore of a task is its reported lag (the previous active owner: 0 unless its lags
  say otherwise), else the whole state: the task's restore cost (`task_costs`, with
  `stickiness: restore_cost`) or one more than its largest reported lag, whichever is larger;
- where the restore is the same, a larger state goes preferably to a client that holds less
  (its whole state times what the client holds): losing any one client later rebuilds less.

One min-cost flow from the tasks' new replicas to the clients that take them. Exact given the
rest of the target, not over every target: a tie-break, not a proven level. Where no lag tells
the eligible clients of any task apart, or past MOST_ARCS task x client pairs, the target is
returned as it is.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.errors import SolverFailure
from stickyd.solvers.flows.levels import solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork
from stickyd.solvers.streams.flow import StreamsTarget

MOST_ARCS = 2_000_000
"""Tasks with new replicas x clients up to which the re-placement is tried."""


def place_warm_standbys(index: StreamsIndex, target: StreamsTarget) -> StreamsTarget:
    """`target` with its new standby replicas re-placed: fewest on their active's rack, then the
    least state restored, then the least state piled on clients that hold much, then as few
    changed as that allows."""
    n = index.client_count
    if index.replicas == 0 or not len(index.lag_pairs):
        return target
    rows = np.flatnonzero(index.stateful)
    placed = target.standby[rows]
    held = index.held_standby(rows[:, None], placed)
    fresh, kept = (placed >= 0) & ~held, (placed >= 0) & held
    with_fresh = fresh.any(axis=1)
    tasks, placed, fresh, kept = rows[with_fresh], placed[with_fresh], fresh[with_fresh], kept[with_fresh]
    if not len(tasks) or len(tasks) * n > MOST_ARCS:
        return target
    price = restore_prices(index, tasks)
    # a new replica may go to any client that neither runs the task nor held a standby of it
    eligible = np.ones((len(tasks), n), dtype=bool)
    eligible[np.arange(len(tasks)), target.active[tasks]] = False
    eligible &= ~_grid(placed, kept, n) & ~_previous_standby_grid(index, tasks)
    spread = np.where(eligible, price, -1).max(axis=1) - np.where(eligible, price, np.iinfo(np.int64).max).min(axis=1)
    if not (spread > 0).any():
        return target  # no reported lag tells the candidates apart
    # lexicographically: standbys on their active's rack, state restored, state piled up
    on_rack = index.same_rack(target.active[tasks][:, None], np.arange(n)[None, :])
    grids = (on_rack.astype(np.int64), price, _piled(index, target, tasks))
    chosen = _solve(tasks, placed, fresh, eligible, grids)
    if chosen is None:
        return target
    current = _grid(placed, fresh, n)
    if tuple(int(g[chosen].sum()) for g in grids) >= tuple(int(g[current].sum()) for g in grids):
        return target
    standby = target.standby.copy()
    for i, t in enumerate(tasks.tolist()):
        standby[t] = sorted(placed[i][kept[i]].tolist() + np.flatnonzero(chosen[i]).tolist())
    return StreamsTarget(active=target.active, standby=standby, kept_face=target.kept_face)


def whole_states(index: StreamsIndex, tasks: np.ndarray) -> np.ndarray:
    """per task: what building its state from nothing costs: its restore cost (`task_costs`, with
    `stickiness: restore_cost`) or one past its largest reported lag, whichever is larger."""
    rows, pairs = _rows_of(index, tasks, index.lag_pairs)
    whole = np.zeros(len(tasks), dtype=np.int64)
    np.maximum.at(whole, rows, pairs[:, 2] + 1)
    return np.maximum(whole, index.move_cost[tasks]) if index.weighted else whole


def restore_prices(index: StreamsIndex, tasks: np.ndarray) -> np.ndarray:
    """shape (tasks, clients): what a new replica of each task costs to build on each client."""
    n = index.client_count
    rows, pairs = _rows_of(index, tasks, index.lag_pairs)
    clients, lags = pairs[:, 1], pairs[:, 2]
    whole = whole_states(index, tasks)
    price = np.repeat(whole[:, None], n, axis=1)
    # the previous active owner has the state, unless its lags say otherwise
    owner = index.prev_active[tasks]
    owned = np.flatnonzero(owner >= 0)
    price[owned, owner[owned]] = 0
    price[rows, clients] = np.minimum(lags, whole[rows])
    return price


def _piled(index: StreamsIndex, target: StreamsTarget, tasks: np.ndarray) -> np.ndarray:
    """shape (tasks, clients): a new replica's whole state times the state its client already
    holds (its stateful actives and kept standbys), each scaled to 2^20: a large state goes
    preferably where little is held, so that losing any one client later rebuilds less."""
    n = index.client_count
    stateful = np.flatnonzero(index.stateful)
    whole = whole_states(index, stateful)
    held = np.bincount(target.active[stateful], weights=whole, minlength=n)
    replicas = target.standby[stateful]
    for k in range(replicas.shape[1]):
        kept = index.held_standby(stateful, replicas[:, k]) & (replicas[:, k] >= 0)
        held += np.bincount(replicas[kept, k], weights=whole[kept], minlength=n)
    mine = whole_states(index, tasks)
    return _scaled(mine)[:, None] * _scaled(held)[None, :]


def _scaled(values: np.ndarray) -> np.ndarray:
    top = float(values.max(initial=0))
    return np.zeros(len(values), np.int64) if top <= 0 else np.floor(values * (2**20 / top)).astype(np.int64)


def _solve(
    tasks: np.ndarray, placed: np.ndarray, fresh: np.ndarray, eligible: np.ndarray, grids: tuple[np.ndarray, ...]
) -> np.ndarray | None:
    """shape (tasks, clients): where the new replicas go, minimising `grids` (a cost per task and
    client each) one after the other, then the replicas changed; None when the costs do not fit."""
    n = eligible.shape[1]
    net = FlowNetwork()
    task0, client0, sink = net.add_nodes(len(tasks)), net.add_nodes(n), net.add_nodes(1)
    row, client = np.nonzero(eligible)
    for i, count in enumerate(fresh.sum(axis=1).tolist()):
        net.supply(task0 + i, count)
    changed = (~_grid(placed, fresh, n)[row, client]).astype(np.int64)
    # never two replicas of a task on one client
    arcs = net.add_arcs(task0 + row, client0 + client, 1, 0)
    # each client takes as many new replicas as the target gave it: its stateful count stays
    taken = np.bincount(placed[fresh], minlength=n)
    bins = net.add_arcs(client0 + np.arange(n), sink, taken, 0)
    net.supply(sink, -int(taken.sum()))
    zeros = np.zeros(bins.stop - bins.start, dtype=np.int64)
    levels = [np.concatenate([cost, zeros]) for cost in (*(g[row, client] for g in grids), changed)]
    try:
        flows = solve_by_levels(net, levels)
    except SolverFailure:
        return None
    chosen = np.zeros_like(eligible)
    chosen[row, client] = flows[arcs] > 0
    return chosen


def _grid(placed: np.ndarray, chosen: np.ndarray, n: int) -> np.ndarray:
    """shape (tasks, clients): the clients of the `chosen` replicas in `placed`."""
    grid = np.zeros((len(placed), n), dtype=bool)
    for k in range(placed.shape[1]):
        grid[np.flatnonzero(chosen[:, k]), placed[chosen[:, k], k]] = True
    return grid


def _previous_standby_grid(index: StreamsIndex, tasks: np.ndarray) -> np.ndarray:
    """shape (tasks, clients): which clients held a standby of each task before."""
    grid = np.zeros((len(tasks), index.client_count), dtype=bool)
    rows, pairs = _rows_of(index, tasks, index.standby_pairs)
    grid[rows, pairs[:, 1]] = True
    return grid


def _rows_of(index: StreamsIndex, tasks: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The `pairs` (task first) on `tasks`, and for each the task's position in `tasks`."""
    row_of = np.full(index.task_count, -1, dtype=np.int64)
    row_of[tasks] = np.arange(len(tasks))
    pairs = pairs[row_of[pairs[:, 0]] >= 0]
    return row_of[pairs[:, 0]], pairs
