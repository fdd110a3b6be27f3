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

`no_negative_cycle` runs Bellman-Ford from a virtual root over dense (members x topics) tables: if
a full round changes no distance, the distances are potentials under which every residual arc has
non-negative reduced cost, so no cycle is negative and the answer is optimal (balance, then moves).
A round count past MAX_ROUNDS proves nothing either way; the dispatcher then runs the full flow.
"""

from __future__ import annotations

import time

import numpy as np

MAX_ROUNDS = 64
"""Bellman-Ford rounds at most; one round is two passes over the (members x topics) tables."""
FAR = np.int64(2**61)
"""no arc: far above any path's cost, far below int64's overflow when a distance is added."""


def no_negative_cycle(
    hand_over: np.ndarray, take: np.ndarray, loads: np.ndarray, balance: int, give_up_at: float = float("inf")
) -> bool:
    """Whether the residual graph is free of negative cycles (proven by converged distances;
    False also when not proven by `give_up_at`, time.monotonic).

    `hand_over` (members, topics) and `take` (topics, members): arc costs, FAR for no arc;
    `balance`: B, the weight of one unit of squared load."""
    up = balance * (2 * loads + 1)
    down = np.where(loads > 0, -balance * (2 * loads - 1), FAR)
    member = np.zeros(len(loads), dtype=np.int64)
    topic = np.zeros(hand_over.shape[1], dtype=np.int64)
    sink = 0
    for _ in range(MAX_ROUNDS):
        if time.monotonic() > give_up_at:
            return False
        new_sink = min(sink, int((member + up).min()))
        new_member = np.minimum(member, new_sink + down)
        new_topic = np.minimum(topic, (new_member[:, None] + hand_over).min(axis=0))
        new_member = np.minimum(new_member, (new_topic[:, None] + take).min(axis=0))
        if new_sink == sink and (new_member == member).all() and (new_topic == topic).all():
            return True
        sink, member, topic = new_sink, new_member, new_topic
    return False


def least_reachable(eligible: np.ndarray, held: np.ndarray, loads: np.ndarray) -> np.ndarray | None:
    """Per member, the least load it reaches by hand-overs (m holds a unit of a topic m' reads, and
    on from m'), itself included; the balance can improve exactly where it is L(m) - 2 or less.

    `eligible` (topics, members), `held` (members, topics): the fixed point of
    reach(m) = min(L(m), min over topics m holds of min over their readers of reach); None when
    chains run longer than MAX_ROUNDS."""
    far = np.iinfo(np.int64).max
    reach = loads.copy()
    for _ in range(MAX_ROUNDS):
        by_topic = np.where(eligible, reach[None, :], far).min(axis=1)
        step = np.minimum(reach, np.where(held, by_topic[None, :], far).min(axis=1))
        if (step == reach).all():
            return reach
        reach = step
    return None
