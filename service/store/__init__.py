"""The service's database: engine and sessions from settings, the declarative base, Alembic
migrations (shipped in the package), and the group state store.

Other tables (e.g. tokens) map onto `Base` in their own module and add an Alembic revision in
`service/store/migrations/versions/`.
"""

from stickyd.service.store.base import DEFAULT_TENANT, Base
from stickyd.service.store.engine import Database, database_url, make_engine, open_database
from stickyd.service.store.groups import (
    NewGeneration,
    Retention,
    StaleWrite,
    StoredGroup,
    commit_generation,
    count_history,
    forget_group,
    list_groups,
    load_group,
    read_answers,
    read_history,
    read_last_generations,
    read_timeline,
    summary_of_record,
    update_state,
)

__all__ = [
    "DEFAULT_TENANT",
    "Base",
    "Database",
    "NewGeneration",
    "Retention",
    "StaleWrite",
    "StoredGroup",
    "commit_generation",
    "count_history",
    "database_url",
    "forget_group",
    "list_groups",
    "load_group",
    "make_engine",
    "open_database",
    "read_answers",
    "read_history",
    "read_last_generations",
    "read_timeline",
    "summary_of_record",
    "update_state",
]
