"""Bearer tokens: each belongs to one tenant and is stored only as its SHA-256 digest.

A token is 32 random bytes (256 bits), so a fast digest is enough: nobody can guess one, and a
stolen database yields no usable token. The token itself is shown once, when it is created.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

from sqlalchemy import Float, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from stickyd.service.store.base import Base
from stickyd.service.store.engine import Database
from stickyd.service.store.tables import TENANT_LENGTH

TOKEN_PREFIX = "stk_"
TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""Tenant names: letters, digits, '.', '_', '-', starting with a letter or digit, 128 at most."""


class TokenRow(Base):
    """A token's digest, its tenant, and when it was created and (if so) revoked."""

    __tablename__ = "tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH), index=True)
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def tenant_name_error(tenant: str) -> str | None:
    """Why `tenant` is not a usable tenant name, or None."""
    if TENANT_NAME.fullmatch(tenant):
        return None
    return "use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"


def create_token(database: Database, tenant: str) -> str:
    """A new token for `tenant` (its digest stored); the only time the token is seen."""
    problem = tenant_name_error(tenant)
    if problem:
        raise ValueError(f"tenant {tenant!r}: {problem}")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with database.writing() as session:
        session.add(TokenRow(token_hash=token_digest(token), tenant=tenant, created_at=time.time()))
    return token


def revoke_token(database: Database, token: str) -> str | None:
    """Revoke `token`; its tenant, or None when no such token was ever created (revoking twice
    is fine: the first revocation time stays)."""
    digest = token_digest(token)
    with database.writing() as session:
        row = session.get(TokenRow, digest)
        if row is None:
            return None
        session.execute(
            update(TokenRow)
            .where(TokenRow.token_hash == digest, TokenRow.revoked_at.is_(None))
            .values(revoked_at=time.time())
        )
        return row.tenant


def tenant_of(database: Database, token: str) -> str | None:
    """The tenant of a live (created, not revoked) token, else None."""
    query = select(TokenRow.tenant).where(TokenRow.token_hash == token_digest(token), TokenRow.revoked_at.is_(None))
    with database.reading() as session:
        return session.execute(query).scalar_one_or_none()
