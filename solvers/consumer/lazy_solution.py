"""A `ConsumerSolution` whose partition maps are built only when someone reads them.

At 1M partitions the answer's {member: {topic: [partitions]}} maps are a million Python lists
(0.7 s of CPU); a caller that only reads `stats`, or that wants the answer as JSON bytes
(`answer_json`, written straight from integer columns), never needs them. The maps are made
on the first read of `assignment`, `revoke`, `target` or `unassigned`, or of anything that
looks at every field (dumping, comparing, copying, pickling), and kept from then on: the
object behaves as the plain frozen model it extends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import PrivateAttr

from stickyd.models.consumer.problem import ConsumerSolution, ConsumerStats

LAZY_FIELDS = ("assignment", "revoke", "target", "unassigned")
"""in the model's field order, before `stats`."""

Maps = Callable[[], dict[str, Any]]
"""makes the four lazy fields' values."""
Writer = Callable[[ConsumerStats], bytes]
"""writes the whole answer as the contract's JSON bytes."""


class LazyConsumerSolution(ConsumerSolution):
    """A ConsumerSolution made from columns: the partition maps appear on first use."""

    _maps: Maps | None = PrivateAttr(default=None)
    _writer: Writer | None = PrivateAttr(default=None)
    _compact: Writer | None = PrivateAttr(default=None)

    @classmethod
    def of(
        cls, stats: ConsumerStats, maps: Maps, writer: Writer | None = None, compact: Writer | None = None
    ) -> LazyConsumerSolution:
        # every field given: without them, model_construct inspects the default factories'
        # signatures on each call (a tenth of a tiny group's solve)
        solution = cls.model_construct(stats=stats, assignment={}, revoke={}, target=None, unassigned={})
        for name in LAZY_FIELDS:
            solution.__dict__.pop(name, None)
        solution._maps = maps
        solution._writer = writer
        solution._compact = compact
        return solution

    def _materialise(self) -> None:
        maps = self._maps
        if maps is None:
            return
        values = maps()
        stats = self.__dict__.pop("stats")
        for name in LAZY_FIELDS:
            self.__dict__[name] = values[name]
        self.__dict__["stats"] = stats  # keep the model's field order for dumps
        self._maps = None
        self._writer = None
        self._compact = None

    def __getattr__(self, item: str) -> Any:
        if item in LAZY_FIELDS:
            self._materialise()
            return self.__dict__[item]
        return super().__getattr__(item)  # type: ignore[misc]

    def answer_json(self) -> bytes:
        """The answer as the contract's JSON bytes, without building the partition maps when
        they are not built yet."""
        if self._writer is not None and self._maps is not None:
            return self._writer(self.stats)
        return self.model_dump_json().encode()

    def answer_compact(self) -> bytes | None:
        """The answer in the compact encoding written from the columns, or None once the maps
        are built (the caller then encodes the maps)."""
        if self._compact is not None and self._maps is not None:
            return self._compact(self.stats)
        return None

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        self._materialise()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        self._materialise()
        return super().model_dump_json(**kwargs)

    def model_copy(self, **kwargs: Any) -> LazyConsumerSolution:
        self._materialise()
        return super().model_copy(**kwargs)

    def __eq__(self, other: object) -> bool:
        self._materialise()
        if isinstance(other, LazyConsumerSolution):
            other._materialise()
        if isinstance(other, ConsumerSolution):
            # equal to a plain ConsumerSolution with the same fields
            return self.__dict__ == other.__dict__
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Any:
        self._materialise()
        return super().__iter__()

    def __repr_args__(self) -> Any:
        self._materialise()
        return super().__repr_args__()

    def __getstate__(self) -> dict[Any, Any]:
        self._materialise()
        return super().__getstate__()

    def __copy__(self) -> LazyConsumerSolution:
        self._materialise()
        return super().__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> LazyConsumerSolution:
        self._materialise()
        return super().__deepcopy__(memo)
