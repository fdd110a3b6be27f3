"""Which tenant a request acts for: the bearer token's (service/http/auth.py), `default` with auth off."""

from __future__ import annotations

from stickyd.service.http.auth import Tenant, current_tenant

__all__ = ["Tenant", "current_tenant"]
