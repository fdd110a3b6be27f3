"""Produce rates from sampled end offsets (service/watch/rates.py): the window, counter resets,
partitions appearing and disappearing, and the integer weights the contract allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stickyd.models.consumer.weights import MAX_WEIGHT
from stickyd.service.watch.rates import UNMEASURED, LiveRates, RateWindow


def test_one_sample_measures_nothing_and_two_measure_records_per_second() -> None:
    window = RateWindow(60)
    window.add(0.0, {("orders", 0): 100, ("orders", 1): 5})
    assert window.rates() == {"orders": (UNMEASURED, UNMEASURED)}
    window.add(10.0, {("orders", 0): 1100, ("orders", 1): 5})
    assert window.rates() == {"orders": (100, 0)}
    assert window.span_s() == 10.0


def test_the_rate_spans_the_window_and_forgets_what_is_older() -> None:
    """Samples every 10 s in a 30 s window: once full, the rate covers the last 30 s only, so a
    burst that ended earlier no longer counts."""
    window = RateWindow(30)
    ends = 0
    for t, rate in enumerate([1000, 1000, 0, 0, 0, 0]):
        window.add(t * 10.0, {("t", 0): ends})
        ends += rate * 10
    window.add(60.0, {("t", 0): ends})
    assert window.rates() == {"t": (0,)}
    assert window.span_s() == 30.0


def test_a_half_full_window_measures_what_it_has_seen() -> None:
    window = RateWindow(60)
    window.add(0.0, {("t", 0): 0})
    window.add(5.0, {("t", 0): 50})
    assert window.rates() == {"t": (10,)}


def test_an_end_offset_going_back_starts_the_partition_again() -> None:
    """The topic was deleted and created again: the old counter says nothing about the new one."""
    window = RateWindow(60)
    window.add(0.0, {("t", 0): 5000, ("t", 1): 0})
    window.add(10.0, {("t", 0): 6000, ("t", 1): 100})
    window.add(20.0, {("t", 0): 30, ("t", 1): 200})
    assert window.rates() == {"t": (UNMEASURED, 10)}
    window.add(30.0, {("t", 0): 130, ("t", 1): 300})
    assert window.rates() == {"t": (10, 10)}


def test_new_partitions_are_unmeasured_until_seen_twice_and_deleted_topics_are_forgotten() -> None:
    window = RateWindow(60)
    window.add(0.0, {("a", 0): 0, ("gone", 0): 0})
    window.add(10.0, {("a", 0): 100, ("a", 2): 7})
    assert window.rates() == {"a": (10, UNMEASURED, UNMEASURED)}
    window.add(20.0, {("a", 0): 200, ("a", 2): 17, ("a", 1): 0})
    assert window.rates() == {"a": (10, UNMEASURED, 1)}


def test_rates_round_to_integers_within_the_contracts_range() -> None:
    window = RateWindow(60)
    window.add(0.0, {("t", 0): 0, ("t", 1): 0, ("t", 2): 0})
    window.add(4.0, {("t", 0): 2, ("t", 1): 6, ("t", 2): 2**62})
    assert window.rates() == {"t": (0, 2, MAX_WEIGHT)}


def test_live_rates_find_a_topic_by_name_or_id_and_only_once_measured() -> None:
    rates = LiveRates({"a": (5, UNMEASURED), "b": (UNMEASURED,)}, {"ID-a": "a", "ID-b": "b"}, 10.0, 1.0)
    assert rates.measured("a") == (5, UNMEASURED) == rates.measured("ID-a")
    assert rates.measured("b") is None and rates.measured("ID-b") is None and rates.measured("c") is None


@given(
    st.lists(st.tuples(st.floats(0.1, 30), st.integers(0, 10**6)), min_size=2, max_size=30),
    st.floats(1, 120),
)
def test_a_steady_producer_is_measured_at_its_rate(steps: list[tuple[float, int]], window_s: float) -> None:
    """Whatever the sampling times and the window, records produced at a constant rate measure as
    that rate, within what whole offsets allow (each end offset is off by up to half a record, so
    the rate by up to 1 / span, then rounded); the window never keeps fewer than the two samples a
    rate needs."""
    per_second = 250
    window = RateWindow(window_s)
    at = 0.0
    for gap, _ in steps:
        window.add(at, {("t", 0): round(at * per_second)})
        at += gap
    measured = window.rates()["t"][0]
    assert window.span_s() > 0
    assert abs(measured - per_second) <= 0.5 + 1 / window.span_s()


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=20))
def test_every_rate_is_a_contract_weight_or_unmeasured(ends: list[int]) -> None:
    """Any sequence of end offsets, resets included: each rate is an integer 0..10^12, or UNMEASURED."""
    window = RateWindow(15)
    for i, end in enumerate(ends):
        window.add(i * 5.0, {("t", 0): end})
    (rate,) = window.rates()["t"]
    assert rate == UNMEASURED or 0 <= rate <= MAX_WEIGHT
    assert (rate == UNMEASURED) == (len(ends) < 2 or ends[-1] < ends[-2])
