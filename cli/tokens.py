"""`stickyd tokens create|revoke`: bearer tokens in the service's database (the same STICKYD_*
database settings as `stickyd serve`: STICKYD_DATABASE_URL, else SQLite in STICKYD_DATA_DIR)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from stickyd.service.store import Database

tokens_app = typer.Typer(
    help="Bearer tokens for the service (STICKYD_AUTH), in the database `stickyd serve` uses.",
    no_args_is_help=True,
)


def _fail(message: str) -> NoReturn:
    typer.echo(f"stickyd: {message}", err=True)
    raise typer.Exit(code=2)


def _database() -> Database:
    from stickyd.service.settings import Settings
    from stickyd.service.store import open_database

    try:
        settings = Settings()
    except ValueError as problem:
        _fail(f"settings: {problem}".splitlines()[0])
    return open_database(settings.data_dir, settings.database_url)


@tokens_app.command("create")
def create(tenant: Annotated[str, typer.Option("--tenant", help="the tenant the token acts for")]) -> None:
    """Create a token for TENANT and print it alone on stdout (it is stored only as a digest:
    this is the one time it is shown)."""
    from stickyd.service.store.tokens import create_token, tenant_name_error

    problem = tenant_name_error(tenant)
    if problem:
        _fail(f"--tenant {tenant!r}: {problem}")
    database = _database()
    try:
        token = create_token(database, tenant)
    finally:
        database.close()
    typer.echo(token)


@tokens_app.command("revoke")
def revoke(token: Annotated[str, typer.Argument(help="the token to revoke, or - to read it from stdin")]) -> None:
    """Revoke TOKEN: from now on requests carrying it get 401."""
    from stickyd.service.store.tokens import revoke_token

    if token == "-":
        token = sys.stdin.readline().strip()
    database = _database()
    try:
        tenant = revoke_token(database, token)
    finally:
        database.close()
    if tenant is None:
        _fail("no such token")
    typer.echo(f"revoked a token of tenant {tenant!r}", err=True)
