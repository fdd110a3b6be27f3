"""The group store on SQLite and on a real PostgreSQL server: generations, compare-and-set
fencing under racing writers, forgetting, history retention, tenants, migrations."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import inspect, text

from stickyd.service.store import (
    Database,
    NewGeneration,
    Retention,
    StaleWrite,
    commit_generation,
    count_history,
    forget_group,
    list_groups,
    load_group,
    read_history,
)

KEEP_ALL = Retention(max_generations=1000, max_age_s=86_400)


def generation_of(state: dict[str, Any]) -> NewGeneration:
    return NewGeneration(
        kind="consumer", grace_ms=0, state=state, record={"state": state}, members=1, moves=0, solver="t"
    )


def write(db: Database, group: str, state: dict[str, Any], now: float = 1000.0, tenant: str = "default") -> int:
    read = load_group(db, tenant, group)
    return commit_generation(db, tenant, group, read, generation_of(state), KEEP_ALL, now)


def test_generations_start_at_zero_and_count_up_by_one(database: Database) -> None:
    assert [write(database, "g", {"n": n}) for n in range(4)] == [0, 1, 2, 3]
    stored = load_group(database, "default", "g")
    assert stored is not None and stored.generation == 3 and stored.state == {"n": 3}
    assert [h["generation"] for h in read_history(database, "default", "g", 10)] == [3, 2, 1, 0]


def test_a_write_based_on_an_old_read_changes_nothing(database: Database) -> None:
    write(database, "g", {"n": 0})
    old = load_group(database, "default", "g")
    write(database, "g", {"n": 1})
    with pytest.raises(StaleWrite) as lost:
        commit_generation(database, "default", "g", old, generation_of({"n": "zombie"}), KEEP_ALL, 1000.0)
    assert lost.value.current is not None and lost.value.current.generation == 1
    stored = load_group(database, "default", "g")
    assert stored is not None and stored.state == {"n": 1}
    assert count_history(database, "default", "g") == 2


@pytest.mark.parametrize("existing", [False, True], ids=["new-group", "existing-group"])
def test_of_racing_writers_from_one_read_exactly_one_wins(database: Database, existing: bool) -> None:
    """Eight threads commit the next generation from the same read: one succeeds, seven get
    StaleWrite, and the stored state is the winner's (compare-and-set on the row)."""
    if existing:
        write(database, "race", {"n": "start"})
    read = load_group(database, "default", "race")
    barrier = threading.Barrier(8)
    outcomes: list[tuple[int, int | str]] = []

    def racer(n: int) -> None:
        barrier.wait()
        try:
            outcomes.append(
                (n, commit_generation(database, "default", "race", read, generation_of({"n": n}), KEEP_ALL, 1.0))
            )
        except StaleWrite:
            outcomes.append((n, "stale"))

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [(n, g) for n, g in outcomes if g != "stale"]
    assert len(outcomes) == 8 and len(winners) == 1
    winner, generation = winners[0]
    assert generation == (1 if existing else 0)
    stored = load_group(database, "default", "race")
    assert stored is not None and stored.state == {"n": winner} and stored.generation == generation


def test_forgetting_drops_state_and_history_but_never_reuses_a_generation(database: Database) -> None:
    for n in range(3):
        write(database, "g", {"n": n})
    assert forget_group(database, "default", "g", 2000.0)
    assert not forget_group(database, "default", "g", 2001.0)
    stored = load_group(database, "default", "g")
    assert stored is not None and stored.forgotten and stored.visible_generation == -1
    assert count_history(database, "default", "g") == 0 and list_groups(database, "default") == []
    assert write(database, "g", {"n": "again"}) == 3


def test_history_is_retained_by_count_and_by_age(database: Database) -> None:
    by_count = Retention(max_generations=3, max_age_s=86_400)
    for n in range(6):
        read = load_group(database, "default", "c")
        commit_generation(database, "default", "c", read, generation_of({"n": n}), by_count, 1000.0 + n)
    assert [h["generation"] for h in read_history(database, "default", "c", 100)] == [5, 4, 3]
    by_age = Retention(max_generations=1000, max_age_s=10)
    for n, now in enumerate([0.0, 5.0, 12.0, 100.0]):
        read = load_group(database, "default", "a")
        commit_generation(database, "default", "a", read, generation_of({"n": n}), by_age, now)
    # at t=100 everything older than t=90 goes, except the newest generation itself
    assert [h["generation"] for h in read_history(database, "default", "a", 100)] == [3]


def test_a_tenant_never_sees_another_tenants_group(database: Database) -> None:
    write(database, "shared-name", {"who": "alpha"}, tenant="alpha")
    write(database, "shared-name", {"who": "beta"}, tenant="beta")
    write(database, "shared-name", {"who": "beta"}, tenant="beta")
    alpha, beta = load_group(database, "alpha", "shared-name"), load_group(database, "beta", "shared-name")
    assert alpha is not None and alpha.state == {"who": "alpha"} and alpha.generation == 0
    assert beta is not None and beta.generation == 1
    assert load_group(database, "gamma", "shared-name") is None
    assert [g.group_id for g in list_groups(database, "alpha")] == ["shared-name"]
    assert forget_group(database, "alpha", "shared-name", 1.0)
    assert (
        load_group(database, "beta", "shared-name") is not None and count_history(database, "beta", "shared-name") == 2
    )


def test_migrations_bring_an_empty_database_to_the_newest_schema_once(database: Database) -> None:
    """Opening the same database again (a second `serve`, a restart) finds it up to date."""
    again = Database(database.url)
    again.upgrade()
    with again.engine.connect() as connection:
        tables = set(inspect(connection).get_table_names())
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    again.close()
    assert {"groups", "group_generations", "alembic_version"} <= tables
    assert len(version) == 1


def test_the_timeline_reads_figures_from_the_summary_or_else_from_the_answer(database: Database) -> None:
    """Rows with a summary give it; rows written before summaries were kept have their figures
    picked out of the stored answer by the database, the same figures either way."""
    from stickyd.service.store import read_last_generations, read_timeline, summary_of_record

    record = {
        "solution": {"assignment": {"a": {"t": [0, 1]}}, "stats": {"solver": "s", "moves": 2, "min_load": 2,
                                                                    "max_load": 2, "warnings": ["w"]}},
        "newcomers": ["a"], "departed": ["b"], "leaving": [{"id": "c", "empty": True}],
        "held": [{"id": "d", "since": 1.0, "until": 2.0, "assignment": {}}],
    }  # fmt: skip
    for summary in (None, summary_of_record(record)):
        read = load_group(database, "default", "timeline")
        new = NewGeneration("consumer", 0, {}, record, members=1, moves=2, solver="s", summary=summary)
        commit_generation(database, "default", "timeline", read, new, KEEP_ALL, 1000.0)
        last = read_last_generations(database, "default")["timeline"]  # the newest, with or without its summary
        assert last["generation"] == (0 if summary is None else 1) and last["summary"]["newcomers"] == ["a"]
    old, new_row = read_timeline(database, "default", "timeline", 10)
    assert (old["generation"], new_row["generation"]) == (0, 1)
    assert old["summary"] == new_row["summary"] == {
        "stats": {"solver": "s", "moves": 2, "min_load": 2, "max_load": 2},
        "newcomers": ["a"], "departed": ["b"], "leaving": ["c"], "held": ["d"],
    }  # fmt: skip
    assert read_timeline(database, "default", "timeline", 1) == [new_row]
    assert read_last_generations(database, "default")["timeline"] == new_row
