"""`/ui/`: the page and its two assets, served from the package (`service/ui/static/`).

The page holds no data: everything it shows comes from the `/v1/groups` API with the token the
operator typed in (kept in the tab's sessionStorage), so the same authentication and tenants apply.
Its Content-Security-Policy lets it load nothing but the service's own script, style and API.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
ASSETS_URL = "/ui/assets"
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}


def add_ui(app: FastAPI) -> None:
    """Mount the assets and add the page at `/ui/` (and `/ui`, redirected there)."""
    app.mount(ASSETS_URL, StaticFiles(directory=STATIC), name="ui-assets")

    @app.get("/ui/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=HEADERS)

    @app.get("/ui", include_in_schema=False)
    async def to_page() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)
