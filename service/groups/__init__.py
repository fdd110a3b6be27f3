"""Groups as a resource: state kept between rebalances (docs/wire-format.md, group state)."""

from stickyd.service.groups.routes import groups

__all__ = ["groups"]
