"""Which tenant a request acts for. Authentication (issue 16) replaces this with the token's tenant."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from service.store import DEFAULT_TENANT


def current_tenant() -> str:
    return DEFAULT_TENANT


Tenant = Annotated[str, Depends(current_tenant)]
