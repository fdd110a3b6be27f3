"""Groups as a resource: state kept between rebalances (contract section 4)."""

from stickyd.service.groups.routes import groups

__all__ = ["groups"]
