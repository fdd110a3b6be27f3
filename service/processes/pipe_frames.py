"""Length-prefixed pickle frames between the web process and its solver processes (both ours)."""

from __future__ import annotations

import pickle
import signal
import struct
from typing import Any, BinaryIO

HEADER = struct.Struct("<I")


def encode_frame(message: Any) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def decode_frame(payload: bytes) -> Any:
    return pickle.loads(payload)  # noqa: S301 - frames come only from our own processes


def write_frame(out: BinaryIO, message: Any) -> None:
    """Write one frame whole: SIGUSR1 (cancel) waits until it is out, so a frame is never cut."""
    frame = encode_frame(message)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        out.write(frame)
        out.flush()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def read_frame(source: BinaryIO) -> Any | None:
    """The next message, or None at the end of the stream."""
    header = source.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    payload = source.read(size)
    if len(payload) < size:
        return None
    return decode_frame(payload)
