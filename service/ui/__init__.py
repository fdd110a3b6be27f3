"""The operator's web page (`/ui/`): the groups, one group's members, assignment and history, what
if, and why. Plain HTML, CSS and JavaScript served by the service itself (no CDN)."""

from stickyd.service.ui.pages import add_ui

__all__ = ["add_ui"]
