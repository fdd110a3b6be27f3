"""Squared loads as min-cost-flow arcs: one arc per unit inside a window, doubling segments beyond.

A member taking x units (lo <= x <= hi) costs x^2: its k-th unit costs 2k - 1 (its *marginal*).
One arc per unit from lo to hi would be exact but grows with the partitions, so each member gets
unit arcs only inside a window (a, b], and outside it segments that double in width away from
the window, each charging one marginal for all its units: a segment below the window charges its
top unit's marginal, one above charges its bottom unit's. Costs still rise unit by unit, so the
flow is a convex problem and fills a member's arcs in order.

Capped (`capped=True`, for large flows), no segment far above the window charges more than the
marginal of unit K = CAP_FACTOR x the largest window top (`cap`). Uncapped, a member's arcs there
would cost up to twice its capacity's marginal, and the largest cost sets how many phases
OR-Tools' cost scaling runs (a 1M x 2,000 unequal group's flow with its balance level on these
arcs: 0.40 s uncapped, 0.30 s capped). A capped segment still charges no more than any of its
units costs, and costs still rise unit by unit.

Proof of optimality (`settled`): a flow is optimal for the true costs when its residual graph
has no negative cycle under the true marginals. At a member with x units, the arcs' residual
marginals are the cost of the arc holding unit x + 1 (taking one more) and minus the cost of the
arc holding unit x (giving one back). If the first is at most the true 2x + 1 and the second at
least the true 2x - 1, every residual cycle costs at least as much under the true marginals as
under the arcs'; with none negative under the arcs' (the flow is optimal for them), none is
negative under the true ones. Where that fails, windows widen (`widen`) until all settle. A load
whose capped segment charges less than its own marginal is not settled: the window widens to take
it in, and the cap rises with the window.
"""

from __future__ import annotations

import numpy as np

from stickyd.solvers.consumer.classes import ranges

CAP_FACTOR = 4
"""above the windows, segments charge at most the marginal of this many times the largest window
top (measured at 1M x 2,000 unequal: 4x and 16x ran the flow 20-25% faster than no cap, 2x only
about 10%, with many more arcs at one cost)."""


def cap(b: np.ndarray) -> np.ndarray:
    """Per member, the highest unit whose marginal a segment above its window charges: CAP_FACTOR
    times the largest window top, and never below the member's own window (costs keep rising)."""
    return np.maximum(b + 1, CAP_FACTOR * int(np.max(b, initial=0)))


def load_segments(
    lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, *, capped: bool = False
) -> tuple[np.ndarray, ...]:
    """(member, capacity, k) per arc: k is the unit whose marginal the arc charges (cost
    (2k - 1) times the member's balance weight). Below-window segments, then unit arcs, then
    above-window segments, each part member by member in rising units. lo <= a <= b <= hi;
    `capped`: above the window, k is at most `cap(b)`."""
    n = len(lo)
    members = np.arange(n, dtype=np.int64)
    bits = int(np.max(hi - lo, initial=0)).bit_length() + 1
    step = (np.int64(1) << np.arange(bits, dtype=np.int64))[None, :]
    # below: segments (a - (2^(j+1) - 1), a - (2^j - 1)], cut at lo, charging their top unit
    step_down = step[:, ::-1]
    top = a[:, None] - (step_down - 1)
    bottom = np.maximum(a[:, None] - (2 * step_down - 1), lo[:, None])
    below = (top - bottom, top)
    # inside: one arc per unit a + 1 .. b
    width = b - a
    inside_member = np.repeat(members, width)
    inside_k = np.repeat(a, width) + ranges(width) + 1
    # above: segments (b + 2^j - 1, b + 2^(j+1) - 1], cut at hi, charging their bottom unit
    start = b[:, None] + (step - 1)
    end = np.minimum(b[:, None] + (2 * step - 1), hi[:, None])
    above = (end - start, np.minimum(start + 1, cap(b)[:, None]) if capped else start + 1)
    grid = np.broadcast_to(members[:, None], (n, bits))
    below_keep = below[0] > 0
    above_keep = above[0] > 0
    member = np.concatenate([grid[below_keep], inside_member, grid[above_keep]])
    capacity = np.concatenate([below[0][below_keep], np.ones(len(inside_k), np.int64), above[0][above_keep]])
    k = np.concatenate([below[1][below_keep], inside_k, above[1][above_keep]])
    return member, capacity, k


def charged(unit: np.ndarray, a: np.ndarray, b: np.ndarray, *, capped: bool = False) -> np.ndarray:
    """k of the arc holding `unit` (per member; lo < unit <= hi; with `capped`, `b` holds every
    member's window top, whose largest sets the cap)."""
    below = unit <= a
    above = unit > b
    # below: the segment j with 2^j - 1 <= a - unit < 2^(j+1) - 1 charges unit a - (2^j - 1)
    j_below = _floor_log2(np.where(below, a - unit + 1, 1))
    # above: the segment j with 2^j <= unit - b < 2^(j+1) charges unit b + 2^j
    j_above = _floor_log2(np.where(above, unit - b, 1))
    one = np.int64(1)
    bottom = b + (one << j_above)
    return np.where(
        below, a - ((one << j_below) - 1), np.where(above, np.minimum(bottom, cap(b)) if capped else bottom, unit)
    )


def settled(
    x: np.ndarray, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, *, capped: bool = False
) -> np.ndarray:
    """Per member: the arcs' marginals at x units are no more favourable to a change than the
    true ones (see the module's proof); `capped` as the arcs were built."""
    more = (x >= hi) | (charged(np.minimum(x + 1, hi), a, b, capped=capped) <= x + 1)
    fewer = (x <= lo) | (charged(np.maximum(x, lo + 1), a, b, capped=capped) >= x)
    return more & fewer


def widen(
    x: np.ndarray, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, done: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Windows for the next round, never narrower: every member's covers x +- 2 (where ties
    let the next flow shift a unit or two), an unsettled member's twice as far beyond x as x
    lay outside it. Loads inside a window are always settled, so the rounds end."""
    reach = np.where(done, 2, 2 * np.maximum(np.maximum(a - x, x - b), 2))
    return np.maximum(lo, np.minimum(a, x - reach)), np.minimum(hi, np.maximum(b, x + reach))


def _floor_log2(values: np.ndarray) -> np.ndarray:
    """floor(log2(v)) for integers v >= 1, exactly (frexp: v = m 2^e with 0.5 <= m < 1)."""
    return np.frexp(values.astype(np.float64))[1].astype(np.int64) - 1
