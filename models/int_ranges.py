"""Integer fields bounded by the types Kafka itself uses on the wire, so that no number a client
sends overflows the solvers' int64 arrays: partition numbers and counts, generations, threads and
replica counts are Kafka int32s; lags and offsets int64s."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

Int32 = Annotated[int, Field(le=INT32_MAX)]
"""At most 2,147,483,647 (Kafka's int32); each field adds its own lower bound."""
Int64 = Annotated[int, Field(le=INT64_MAX)]
"""At most 9,223,372,036,854,775,807 (Kafka's int64, offsets and lags)."""
