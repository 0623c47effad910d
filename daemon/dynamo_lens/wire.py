"""The worker wire protocol: msgpack maps over a pair of pipes.

Parent -> worker: ``{"op": "discover" | "analyze" | "shutdown", "id": int, "params": {...}}``.
Worker -> parent: ``{"ev": "ready", "env": {...}}``, ``{"ev": "progress", "id", ...}``,
``{"ev": "result", "id", "result": {...}}``, ``{"ev": "failed", "id", "error": {...}}`` and
``{"ev": "cancelled", "id"}``.

Framing is msgpack's own: the streaming ``Unpacker`` reads whole objects off an unbuffered pipe,
so a partial read never yields a half message.
"""

from __future__ import annotations

import dataclasses
import io
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import msgpack

# A generous cap: one message holds at most a target report, never tensors.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Any one text (an exception message, user output in a finding) is cut to this on sending:
# user code can raise with a 70 MB message, and no diagnostic or cache entry should hold it.
MAX_TEXT = 16 * 1024
# The line a worker prints after a job's output, before its reply: the parent counts the job's
# output once it has read this far (the reply travels on another pipe, and can come first).
END_OF_OUTPUT = "\x1b[dynamo-lens: end of the job's output]"


@dataclass(frozen=True)
class Unit:
    """One analysis unit of a file, as ``discover`` finds it and ``analyze`` is given it: a
    ``compile_example`` (with all the targets it returns), a configured target or a guessed
    one. It crosses the wire as a map of these fields (``as_wire``, ``Unit.of_wire``)."""

    name: str
    kind: str  # example | config | guess
    path: str
    line: int
    attr: str  # attribute in the module: the example function or the class

    @classmethod
    def of_wire(cls, data: dict[str, Any]) -> Unit:
        return cls(
            str(data["name"]),
            str(data["kind"]),
            str(data["path"]),
            int(data["line"]),
            str(data["attr"]),
        )

    def as_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def cap_text(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... (truncated, {len(text.encode('utf-8', 'replace'))} bytes)"


def _capped(obj: Any) -> Any:
    if isinstance(obj, str):
        return cap_text(obj)
    if isinstance(obj, dict):
        return {k: _capped(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_capped(v) for v in obj]
    return obj


class ChannelClosed(Exception):
    """The other end went away (EOF on the pipe)."""


class Channel:
    """One direction each way; ``send`` is thread-safe, ``recv`` is for one reader thread."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self._rfile: BinaryIO = io.FileIO(rfd, "rb", closefd=True)
        self._wfile: BinaryIO = io.FileIO(wfd, "wb", closefd=True)
        self._unpacker = msgpack.Unpacker(
            self._rfile, raw=False, max_buffer_size=MAX_MESSAGE_BYTES, strict_map_key=False
        )
        self._wlock = threading.Lock()

    def send(self, msg: dict[str, Any]) -> None:
        data = msgpack.packb(_capped(msg), use_bin_type=True, default=_default)
        with self._wlock:
            view = memoryview(data)
            while view:
                try:
                    n = self._wfile.write(view)
                except (BrokenPipeError, ValueError, OSError) as exc:
                    raise ChannelClosed(str(exc)) from exc
                if n is None:  # pragma: no cover - only on non-blocking pipes
                    continue
                view = view[n:]

    def recv(self) -> dict[str, Any]:
        try:
            msg = next(self._unpacker)
        except StopIteration:
            raise ChannelClosed("end of stream") from None
        except (ValueError, OSError, msgpack.UnpackException) as exc:
            raise ChannelClosed(f"unreadable message: {exc}") from exc
        if not isinstance(msg, dict):
            raise ChannelClosed(f"protocol violation: expected a map, got {type(msg).__name__}")
        return msg

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            try:
                yield self.recv()
            except ChannelClosed:
                return

    def close(self) -> None:
        for f in (self._rfile, self._wfile):
            try:
                f.close()
            except OSError:
                pass


def _default(obj: Any) -> Any:
    # Anything odd that slips into a result (a Path, a numpy scalar) is sent as text.
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "item"):
        try:
            return obj.item()
        except Exception:
            pass
    return str(obj)
