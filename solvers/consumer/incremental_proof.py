"""Why an incremental answer (stickyd.solvers.consumer.incremental) is optimal: the min-cost flow's
optimality condition checked on the answer itself, without solving the flow.

The answer is a flow in the network of solvers/consumer/flow.py (plain topics): a member holding
units of a topic can hand one to any member reading it, and each member's load costs its square
(balance), weighted above every move (an owned partition that changes owner). A flow is optimal
exactly when its residual graph has no cycle of negative cost (for convex separable costs, Ahuja,
Magnanti and Orlin, Network Flows, 14.3). On the aggregated nodes (members, topics, one sink) the
residual arcs of an answer are:

- member m -> topic p: m hands over a unit of p it holds: 0 when m holds a unit someone else
  owned before, +1 when only its own (a move);
- topic p -> member m: m takes a unit of p: -1 when m's own units of p are held elsewhere (one
  comes back), 0 when m reads p;
- member m -> sink: m's load grows by one, B (2 L(m) + 1); sink -> m: it shrinks, -B (2 L(m) - 1);
  B exceeds any count of moves, so balance comes first.

`negative_cycle` runs Bellman-Ford from a virtual root over dense (members x topics) tables: if
a full round changes no distance, the distances are potentials under which every residual arc has
non-negative reduced cost, so no cycle is negative and the answer is optimal (balance, then moves).
That holds whatever distances the rounds start from (they only ever fall), so the caller may start
them from potentials it has (the repair's last search): then one round can prove the answer.
A cycle among its predecessors is a negative one, which the caller cancels (moving units around
it) before asking again. A round count past MAX_ROUNDS proves nothing either way; the dispatcher
then runs the full flow.
"""

from __future__ import annotations

import time

import numpy as np

MAX_ROUNDS = 64
"""Bellman-Ford rounds at most; one round is two passes over the (members x topics) tables."""
FAR = np.int64(2**61)
"""no arc: far above any path's cost, far below int64's overflow when a distance is added."""


_GIVE = np.array([FAR, 1, 0], dtype=np.int64)
"""member -> topic by what it holds: none, only its own units, some it did not own."""
_TAKE = np.array([FAR, 0, -1, -1], dtype=np.int64)
"""topic -> member by (own units elsewhere, reads the topic)."""


def residual_costs(counts: np.ndarray, claimed: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The residual arcs' costs at `counts` (members, topics) against `claimed`: `hand_over`
    (topics, members), member m hands a unit of topic p over, and `take` (members, topics), m takes
    one; FAR for no arc. Each is laid out so that a label's minimum runs along its rows."""
    held, extra = counts > 0, counts > claimed  # extra implies held: claims are never negative
    # take() looks the small tables up faster than fancy indexing does
    hand_over = _GIVE.take(np.ascontiguousarray((held.view(np.int8) + extra.view(np.int8)).T))
    short = (counts < claimed).view(np.int8)
    take = _TAKE.take(eligible.T.view(np.int8) + 2 * short)
    return hand_over, take


def negative_cycle(
    hand_over: np.ndarray,
    take: np.ndarray,
    loads: np.ndarray,
    balance: int,
    give_up_at: float = float("inf"),
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[list[int]] | bool:
    """True when the residual graph is proven free of negative cycles (converged distances); the
    negative cycles among the predecessors when some show (nodes: members, then topics, then the
    sink, in the arcs' direction); False when neither is known after MAX_ROUNDS or `give_up_at`.

    `hand_over` (topics, members) and `take` (members, topics): arc costs, FAR for no arc, as
    `residual_costs` makes them; `balance`: B, the weight of one unit of squared load; `start`: the
    members' and topics' distances to begin from (None: 0, the virtual root's arcs)."""
    topics, n = hand_over.shape
    sink_node = n + topics
    up = balance * (2 * loads + 1)
    down = np.where(loads > 0, -balance * (2 * loads - 1), FAR)
    if start is None:
        member, topic, sink = np.zeros(n, dtype=np.int64), np.zeros(topics, dtype=np.int64), 0
    else:
        member, topic = start[0].astype(np.int64), start[1].astype(np.int64)
        sink = int((member + up).min()) if n else 0  # its first relaxation, from the members
    parent = np.full(sink_node + 1, -1, dtype=np.int64)
    for rounds in range(MAX_ROUNDS):
        if time.monotonic() > give_up_at:
            return False
        changed = np.zeros(sink_node + 1, dtype=bool)
        via = int(np.argmin(member + up))
        if member[via] + up[via] < sink:
            sink, parent[sink_node], changed[sink_node] = int(member[via] + up[via]), via, True
        better = sink + down < member
        member = np.where(better, sink + down, member)
        parent[:n][better], changed[:n] = sink_node, better
        # the topics, from the members holding them; then the members, from the topics they read
        through = hand_over + member[None, :]
        best = through.argmin(axis=1)
        cost = through[np.arange(topics), best]
        better = cost < topic
        topic = np.where(better, cost, topic)
        parent[n:sink_node][better], changed[n:sink_node] = best[better], better
        through = take + topic[None, :]
        best = through.argmin(axis=1)
        cost = through[np.arange(n), best]
        better = cost < member
        member = np.where(better, cost, member)
        parent[:n][better] = n + best[better]
        changed[:n] |= better
        if not changed.any():
            return True
        if rounds % 2 == 1:
            cycles = parent_cycles(parent, np.flatnonzero(changed).tolist())
            if cycles:
                return cycles
    return False


def parent_cycles(parent: np.ndarray, starts: list[int]) -> list[list[int]]:
    """The cycles the predecessors lead into from `starts` (each in the arcs' direction), each once.

    A cycle among Bellman-Ford's predecessors has negative cost (each of its arcs was the last to
    lower a distance: Cormen et al., Introduction to Algorithms, lemma 24.16)."""
    done: set[int] = set()
    cycles: list[list[int]] = []
    for start in starts:
        on_path: dict[int, int] = {}
        path: list[int] = []
        node = start
        while node >= 0 and node not in done and node not in on_path:
            on_path[node] = len(path)
            path.append(node)
            node = int(parent[node])
        if node >= 0 and node in on_path:
            cycles.append(path[on_path[node] :][::-1])
        done.update(path)
    return cycles


def least_reachable(
    eligible: np.ndarray, held: np.ndarray, loads: np.ndarray, most_lighter: int | None = None
) -> np.ndarray | None:
    """Per member, the least load it reaches by hand-overs (m holds a unit of a topic m' reads, and
    on from m'), itself included; the balance can improve exactly where it is L(m) - 2 or less.

    `eligible` (topics, members), `held` (members, topics): the fixed point of
    reach(m) = min(L(m), min over topics m holds of min over their readers of reach); None when
    chains run longer than MAX_ROUNDS, or as soon as more than `most_lighter` members reach a load
    two below their own (reach only falls round by round: the fixed point has as many)."""
    far = np.iinfo(np.int64).max
    reach = loads.copy()
    for _ in range(MAX_ROUNDS):
        by_topic = np.where(eligible, reach[None, :], far).min(axis=1)
        step = np.minimum(reach, np.where(held, by_topic[None, :], far).min(axis=1))
        if (step == reach).all():
            return reach
        reach = step
        if most_lighter is not None and np.count_nonzero(reach <= loads - 2) > most_lighter:
            return None
    return None
