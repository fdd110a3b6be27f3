"""Turning pydantic's validation errors into one line that names the field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ProblemError(ValueError):
    """A request that does not fit the contract: `field` names where, `reason` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


def field_path(loc: tuple[int | str, ...]) -> str:
    """('members', 3, 'owned', 'orders', 7) -> 'members[3].owned.orders[7]'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def first_problem(error: ValidationError) -> ProblemError:
    """The first error of a pydantic ValidationError as a ProblemError."""
    details = error.errors(include_url=False)
    if not details:
        return ProblemError("", "invalid request")
    detail = details[0]
    message = str(detail.get("msg", "invalid value"))
    field = field_path(tuple(detail.get("loc", ())))
    cause = (detail.get("ctx") or {}).get("error")
    if isinstance(cause, ProblemError):
        # a model's own check that names the field below the model itself
        joiner = "" if not field or cause.field.startswith("[") else "."
        return ProblemError(f"{field}{joiner}{cause.field}", cause.reason)
    if message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
        # a model's own checks put the path below the model in front of their message
        head, sep, rest = message.partition(": ")
        if sep and head and " " not in head:
            joiner = "" if not field or head.startswith("[") else "."
            field, message = f"{field}{joiner}{head}", rest
    if detail.get("type") == "missing":
        message = "required field is missing"
    elif detail.get("type") == "extra_forbidden":
        message = "unknown field (not in the contract)"
    return ProblemError(field or "body", message)


def parse(model: type[M], data: Any, context: dict[str, Any] | None = None) -> M:
    """Validate a contract dict (or pass a model through), raising ProblemError. `context`:
    pydantic's validation context (e.g. claim columns made from the bytes, models/consumer/wire.py)."""
    if isinstance(data, model):
        return data
    if not isinstance(data, dict):
        raise ProblemError("body", f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        raise first_problem(error) from None
