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
  `stickiness: restore_cost`) or one more than its largest reported lag, whichever is larger.

One min-cost flow from the tasks' new replicas to the clients that take them. Exact given the
rest of the target, not over every target: a tie-break, not a proven level. Where no lag tells
the eligible clients of a task apart, the target is returned as it is.
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
    least state restored, then as few changed as that allows."""
    n = index.client_count
    if index.replicas == 0 or not len(index.lag_pairs):
        return target
    rows = np.flatnonzero(index.stateful)
    placed = target.standby[rows]
    held = _held_before(index, rows, placed)
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
    chosen = _solve(index, target, tasks, placed, fresh, eligible, price)
    if chosen is None:
        return target
    current = _grid(placed, fresh, n)
    same_rack = _same_rack_grid(index, target.active[tasks])
    before = (int((current & same_rack).sum()), int(price[current].sum()))
    if (int((chosen & same_rack).sum()), int(price[chosen].sum())) >= before:
        return target
    standby = target.standby.copy()
    for i, t in enumerate(tasks.tolist()):
        standby[t] = sorted(placed[i][kept[i]].tolist() + np.flatnonzero(chosen[i]).tolist())
    return StreamsTarget(active=target.active, standby=standby, kept_face=target.kept_face)


def restore_prices(index: StreamsIndex, tasks: np.ndarray) -> np.ndarray:
    """shape (tasks, clients): what a new replica of each task costs to build on each client."""
    n = index.client_count
    rows, pairs = _rows_of(index, tasks, index.lag_pairs)
    clients, lags = pairs[:, 1], pairs[:, 2]
    whole = np.zeros(len(tasks), dtype=np.int64)
    np.maximum.at(whole, rows, lags + 1)
    if index.weighted:
        whole = np.maximum(whole, index.move_cost[tasks])
    price = np.repeat(whole[:, None], n, axis=1)
    # the previous active owner has the state, unless its lags say otherwise
    owner = index.prev_active[tasks]
    owned = np.flatnonzero(owner >= 0)
    price[owned, owner[owned]] = 0
    price[rows, clients] = np.minimum(lags, whole[rows])
    return price


def _solve(
    index: StreamsIndex,
    target: StreamsTarget,
    tasks: np.ndarray,
    placed: np.ndarray,
    fresh: np.ndarray,
    eligible: np.ndarray,
    price: np.ndarray,
) -> np.ndarray | None:
    """shape (tasks, clients): where the new replicas go; None when the costs do not fit."""
    n = index.client_count
    net = FlowNetwork()
    task0, client0, sink = net.add_nodes(len(tasks)), net.add_nodes(n), net.add_nodes(1)
    row, client = np.nonzero(eligible)
    for i, count in enumerate(fresh.sum(axis=1).tolist()):
        net.supply(task0 + i, count)
    on_rack = _same_rack_grid(index, target.active[tasks])[row, client].astype(np.int64)
    changed = (~_grid(placed, fresh, n)[row, client]).astype(np.int64)
    restore = price[row, client]
    # never two replicas of a task on one client
    arcs = net.add_arcs(task0 + row, client0 + client, 1, 0)
    # each client takes as many new replicas as the target gave it: its stateful count stays
    taken = np.bincount(placed[fresh], minlength=n)
    bins = net.add_arcs(client0 + np.arange(n), sink, taken, 0)
    net.supply(sink, -int(taken.sum()))
    zeros = np.zeros(bins.stop - bins.start, dtype=np.int64)
    levels = [np.concatenate([cost, zeros]) for cost in (on_rack, restore, changed)]
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


def _held_before(index: StreamsIndex, rows: np.ndarray, placed: np.ndarray) -> np.ndarray:
    """per (task, replica): whether its client held a standby of the task before."""
    n = index.client_count
    pairs = index.standby_pairs
    keys = pairs[:, 0] * n + pairs[:, 1]
    wanted = rows[:, None] * n + placed
    if not len(keys):
        return np.zeros(placed.shape, dtype=bool)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return keys[at] == wanted


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


def _same_rack_grid(index: StreamsIndex, owners: np.ndarray) -> np.ndarray:
    """shape (tasks, clients): whether a client shares the rack of the task's active (KIP-925)."""
    racks = np.array([rack or "" for rack in index.racks], dtype=object)
    of_owner = racks[owners][:, None]
    return (racks[None, :] == of_owner) & (of_owner != "")
