"""Reading and writing group state: the only SQL about groups.

Concurrency rule, written where the writes are: every write to a group row is a compare-and-set
on its `revision` (`UPDATE ... WHERE revision = <the one read>`), and a new group is an INSERT
that the primary key refuses twice. Under PostgreSQL's row locks and SQLite's single writer the
loser of a race changes nothing and learns the current generation, so a generation number is
never handed out twice, by any number of processes. A generation's group row, its history row
and the pruning of old history commit in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, cast, delete, func, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from stickyd.service.store.engine import Database
from stickyd.service.store.tables import GenerationRow, GroupRow


@dataclass(frozen=True)
class StoredGroup:
    tenant: str
    group_id: str
    kind: str
    generation: int
    """the last generation handed out (kept after a forget, so that none is reused)."""
    revision: int
    forgotten: bool
    grace_ms: int
    state: dict[str, Any]
    created_at: float
    updated_at: float

    @property
    def visible_generation(self) -> int:
        """What a caller must send to rebalance: the stored generation, -1 once forgotten."""
        return -1 if self.forgotten else self.generation


@dataclass(frozen=True)
class Retention:
    max_generations: int
    max_age_s: float


@dataclass(frozen=True)
class NewGeneration:
    kind: str
    grace_ms: int
    state: dict[str, Any]
    record: dict[str, Any]
    members: int
    moves: int
    solver: str
    summary: dict[str, Any] | None = None
    """the timeline's figures (stickyd.service.groups.rebalance.summary_of); None: read from `record`."""


class StaleWrite(Exception):
    """Someone else wrote the group since it was read; `current` is what is stored now."""

    def __init__(self, current: StoredGroup | None) -> None:
        super().__init__("the group changed since it was read")
        self.current = current


def _stored(row: GroupRow) -> StoredGroup:
    return StoredGroup(
        tenant=row.tenant,
        group_id=row.group_id,
        kind=row.kind,
        generation=row.generation,
        revision=row.revision,
        forgotten=row.forgotten,
        grace_ms=row.grace_ms,
        state=row.state,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def load_group(db: Database, tenant: str, group_id: str) -> StoredGroup | None:
    """The group's row (forgotten ones too), or None if it never existed."""
    with db.reading() as session:
        row = session.get(GroupRow, (tenant, group_id))
        return _stored(row) if row is not None else None


def list_groups(db: Database, tenant: str) -> list[StoredGroup]:
    with db.reading() as session:
        rows = session.scalars(
            select(GroupRow).where(GroupRow.tenant == tenant, GroupRow.forgotten.is_(False)).order_by(GroupRow.group_id)
        )
        return [_stored(row) for row in rows]


def commit_generation(
    db: Database,
    tenant: str,
    group_id: str,
    read: StoredGroup | None,
    new: NewGeneration,
    retention: Retention,
    now: float,
) -> int:
    """Store the next generation after `read` (None: a new group); its number. Raises StaleWrite."""
    generation = 0 if read is None else read.generation + 1
    try:
        with db.writing() as session:
            if read is None:
                session.add(
                    GroupRow(
                        tenant=tenant,
                        group_id=group_id,
                        kind=new.kind,
                        generation=generation,
                        revision=0,
                        forgotten=False,
                        grace_ms=new.grace_ms,
                        state=new.state,
                        created_at=now,
                        updated_at=now,
                    )
                )
                session.flush()  # the primary key refuses a second creator here
            else:
                changed = session.execute(
                    update(GroupRow)
                    .where(GroupRow.tenant == tenant, GroupRow.group_id == group_id, GroupRow.revision == read.revision)
                    .values(
                        kind=new.kind,
                        generation=generation,
                        revision=read.revision + 1,
                        forgotten=False,
                        grace_ms=new.grace_ms,
                        state=new.state,
                        created_at=now if read.forgotten else read.created_at,
                        updated_at=now,
                    )
                )
                if changed.rowcount != 1:  # type: ignore[attr-defined]
                    raise StaleWrite(None)
            session.add(
                GenerationRow(
                    tenant=tenant,
                    group_id=group_id,
                    generation=generation,
                    kind=new.kind,
                    created_at=now,
                    members=new.members,
                    moves=new.moves,
                    solver=new.solver,
                    record={**new.record, "generation": generation},
                    summary=new.summary,
                )
            )
            _prune(session, tenant, group_id, generation, retention, now)
    except (StaleWrite, IntegrityError):
        raise StaleWrite(load_group(db, tenant, group_id)) from None
    return generation


def _prune(session: Any, tenant: str, group_id: str, newest: int, retention: Retention, now: float) -> None:
    """Drop history beyond the retained count or age (the newest generation always stays)."""
    session.execute(
        delete(GenerationRow).where(
            GenerationRow.tenant == tenant,
            GenerationRow.group_id == group_id,
            GenerationRow.generation != newest,
            or_(
                GenerationRow.generation <= newest - retention.max_generations,
                GenerationRow.created_at < now - retention.max_age_s,
            ),
        )
    )


def update_state(db: Database, read: StoredGroup, state: dict[str, Any], now: float) -> StoredGroup:
    """Change a group's state without a new generation (e.g. members marked leaving)."""
    with db.writing() as session:
        changed = session.execute(
            update(GroupRow)
            .where(
                GroupRow.tenant == read.tenant, GroupRow.group_id == read.group_id, GroupRow.revision == read.revision
            )
            .values(state=state, revision=read.revision + 1, updated_at=now)
        )
        if changed.rowcount != 1:  # type: ignore[attr-defined]
            raise StaleWrite(None)
    current = load_group(db, read.tenant, read.group_id)
    assert current is not None
    return current


def forget_group(db: Database, tenant: str, group_id: str, now: float) -> bool:
    """Forget a group's state and history; False if there was none. Its generation count stays."""
    with db.writing() as session:
        changed = session.execute(
            update(GroupRow)
            .where(GroupRow.tenant == tenant, GroupRow.group_id == group_id, GroupRow.forgotten.is_(False))
            .values(forgotten=True, state={}, grace_ms=0, revision=GroupRow.revision + 1, updated_at=now)
        )
        if changed.rowcount != 1:  # type: ignore[attr-defined]
            return False
        session.execute(delete(GenerationRow).where(GenerationRow.tenant == tenant, GenerationRow.group_id == group_id))
    return True


def read_history(db: Database, tenant: str, group_id: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` retained generations, newest first."""
    with db.reading() as session:
        rows = session.scalars(
            select(GenerationRow)
            .where(GenerationRow.tenant == tenant, GenerationRow.group_id == group_id)
            .order_by(GenerationRow.generation.desc())
            .limit(limit)
        )
        return [
            {
                "generation": row.generation,
                "created_at": row.created_at,
                "members": row.members,
                "moves": row.moves,
                "solver": row.solver,
                "record": row.record,
            }
            for row in rows
        ]


def count_history(db: Database, tenant: str, group_id: str) -> int:
    with db.reading() as session:
        return int(
            session.scalar(
                select(func.count())
                .select_from(GenerationRow)
                .where(GenerationRow.tenant == tenant, GenerationRow.group_id == group_id)
            )
            or 0
        )


TIMELINE_COLUMNS = (
    GenerationRow.group_id,
    GenerationRow.generation,
    GenerationRow.created_at,
    GenerationRow.members,
    GenerationRow.moves,
    GenerationRow.solver,
    GenerationRow.summary,
)


def read_timeline(db: Database, tenant: str, group_id: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` retained generations, oldest first, each with its summary (stats and
    the roster's ids) but not its assignment."""
    with db.reading() as session:
        rows = session.execute(
            select(*TIMELINE_COLUMNS)
            .where(GenerationRow.tenant == tenant, GenerationRow.group_id == group_id)
            .order_by(GenerationRow.generation.desc())
            .limit(limit)
        )
        found = _with_summaries(session, tenant, [row._asdict() for row in rows])
    return found[::-1]


def read_last_generations(db: Database, tenant: str) -> dict[str, dict[str, Any]]:
    """Each of the tenant's groups' newest retained generation, as read_timeline gives it, in one
    query (a group whose history is gone has none)."""
    newest = (GenerationRow.group_id == GroupRow.group_id) & (GenerationRow.generation == GroupRow.generation)
    with db.reading() as session:
        rows = session.execute(
            select(*TIMELINE_COLUMNS)
            .join(GroupRow, (GroupRow.tenant == GenerationRow.tenant) & newest)
            .where(GenerationRow.tenant == tenant, GroupRow.forgotten.is_(False))
        )
        found = _with_summaries(session, tenant, [row._asdict() for row in rows])
    return {row["group_id"]: row for row in found}


def _with_summaries(session: Any, tenant: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows written before summaries were kept get theirs from the stored answer, its parts picked
    out by the database (SQLite's json_extract, PostgreSQL's #>): no answer is decoded whole here."""
    older = [(row["group_id"], row["generation"]) for row in rows if row["summary"] is None]
    if not older:
        return rows
    record = GenerationRow.record
    parts = [record[(name,)].label(name) for name in ("newcomers", "departed", "leaving", "held")]
    picked = session.execute(
        select(GenerationRow.group_id, GenerationRow.generation, record[("solution", "stats")].label("stats"), *parts)
        .where(GenerationRow.tenant == tenant)
        .where(tuple_(GenerationRow.group_id, GenerationRow.generation).in_(older))
    )
    summaries = {(row.group_id, row.generation): summary_of_record(row._asdict()) for row in picked}
    for row in rows:
        if row["summary"] is None:
            row["summary"] = summaries[(row["group_id"], row["generation"])]
    return rows


def summary_of_record(record: dict[str, Any]) -> dict[str, Any]:
    """The timeline's figures of an answer (a record, or its parts picked out by the database)."""
    stats = record.get("stats") or record.get("solution", {}).get("stats") or {}
    return {
        "stats": {key: value for key, value in stats.items() if key != "warnings"},
        "newcomers": list(record.get("newcomers") or []),
        "departed": list(record.get("departed") or []),
        "leaving": [entry["id"] for entry in record.get("leaving") or []],
        "held": [entry["id"] for entry in record.get("held") or []],
    }


def read_answers(db: Database, tenant: str, group_id: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` retained generations, oldest first, each with its answer as the stored
    JSON text (`answer`), for a reader that decodes only the parts it needs: a large group's
    answers hold millions of partition numbers."""
    with db.reading() as session:
        rows = session.execute(
            select(GenerationRow.generation, GenerationRow.created_at, cast(GenerationRow.record, String))
            .where(GenerationRow.tenant == tenant, GenerationRow.group_id == group_id)
            .order_by(GenerationRow.generation.desc())
            .limit(limit)
        )
        found = [{"generation": g, "created_at": at, "answer": text} for g, at, text in rows]
    return found[::-1]
