"""`partition_weights: "live"` read as the watcher's latest rates (docs/wire-format.md, balance `load`).

Runs in the solver process, on the parsed request, with the rates the web process sent beside it.
A topic is found by name, or by its topic id (the KIP-848 plug-in sends ids). A partition the
watcher has no rate for yet (added since its last samples) weighs its topic's mean measured rate,
rounded down, as a partition of a topic the caller gives no weight for does; a measured topic with
more partitions than the request says keeps only the request's.
"""

from __future__ import annotations

from stickyd.models import ConsumerProblem, ProblemError
from stickyd.models.consumer.weights import LIVE
from stickyd.service.watch.rates import UNMEASURED, LiveRates

NO_CLUSTER = (
    '"live" needs the partitions\' measured rates, and this service watches no Kafka cluster '
    "(STICKYD_WATCH_BOOTSTRAP_SERVERS is unset): send the weights (one integer per topic, or one per partition)"
)


def fill_live_weights(problem: ConsumerProblem, rates: LiveRates | None) -> tuple[ConsumerProblem, list[str]]:
    """`problem` with "live" replaced by measured weights, and the warnings that say what was read;
    ProblemError naming `partition_weights` when a subscribed topic has no measurement."""
    if problem.partition_weights != LIVE:
        return problem, []
    if rates is None:
        raise ProblemError("partition_weights", NO_CLUSTER)
    subscribed = {t for m in problem.members for t in m.topics if t in problem.topics}
    weights: dict[str, int | list[int]] = {}
    estimated: list[str] = []
    for topic in sorted(subscribed):
        measured = rates.measured(topic)
        if measured is None:
            raise ProblemError("partition_weights", _unmeasured(topic, rates))
        count = problem.topics[topic]
        known = [r for r in measured[:count] if r != UNMEASURED] or [r for r in measured if r != UNMEASURED]
        mean = sum(known) // len(known)
        given = [measured[p] if p < len(measured) and measured[p] != UNMEASURED else mean for p in range(count)]
        missing = [p for p in range(count) if p >= len(measured) or measured[p] == UNMEASURED]
        if missing:
            estimated.append(f"{topic} {_ranges(missing)}")
        weights[topic] = given
    warnings = [f'partition_weights "live": records/s measured over the last {rates.window_s:.0f} s']
    if estimated:
        warnings.append("partitions without a measured rate yet weigh their topic's mean rate: " + "; ".join(estimated))
    return problem.model_copy(update={"partition_weights": weights}), warnings


def _unmeasured(topic: str, rates: LiveRates) -> str:
    name = rates.ids.get(topic, topic)
    shown = topic if name == topic else f"{topic} ({name})"
    if rates.sampled_at is None:
        return f"no measurement yet for topic {shown}: the watcher has not read the cluster yet"
    if name in rates.topics:
        return f"no measurement yet for topic {shown}: the watcher has sampled it once (a rate needs two samples)"
    return f"no measurement for topic {shown}: the watched cluster has no such topic"


def _ranges(partitions: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    out: list[str] = []
    start = prev = partitions[0]
    for p in [*partitions[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(out)
