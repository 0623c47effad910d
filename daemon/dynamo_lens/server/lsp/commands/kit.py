"""What every ``dynamoLens.server.*`` handler shares: running on the daemon's command threads,
work-done progress on the client's token, a file URI read as a path, and a service's
ValueError answered as the request's InvalidParams."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ..app import DynamoLensServer
from ..convert import uri_to_path

F = TypeVar("F", bound=Callable[..., Any])


def background(fn: F) -> F:
    """Run the command on the daemon's command threads; the event loop awaits it. Never
    pygls's pool: that pool also reads the LSP stream, and commands that run for minutes (a
    traced run, a benchmark, a big trace) must not keep a hover or a cancel from being read."""

    @functools.wraps(fn)
    async def handler(ls: DynamoLensServer, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(ls.commands, functools.partial(fn, ls, *args))

    return handler  # type: ignore[return-value]


@contextmanager
def invalid_params() -> Iterator[None]:
    """The service says what is wrong with a request with ValueError: the client gets it as
    InvalidParams."""
    try:
        yield
    except ValueError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc


def file_path(uri: str) -> str:
    path = uri_to_path(uri)
    if path is None:
        raise JsonRpcInvalidParams(f"not a file URI: {uri}")
    return path


class Progress:
    """Work-done progress on the token the client sent with its request (none: silent), and
    the client's cancel of it: pygls cancels the token's future when the client does."""

    def __init__(self, ls: DynamoLensServer, token: str | int | None) -> None:
        self.ls, self.token = ls, token

    def send(self, kind: str, value: Any) -> None:
        if self.token is not None:
            progress = self.ls.work_done_progress
            self.ls.on_loop_wait(lambda: getattr(progress, kind)(self.token, value))

    def begin(self, title: str, message: str, on_cancel: Callable[[], None]) -> None:
        self.send(
            "begin",
            types.WorkDoneProgressBegin(
                title=title, cancellable=True, message=message, percentage=0
            ),
        )
        if self.token is not None:
            future: Future[Any] | None = self.ls.work_done_progress.tokens.get(self.token)
            if future is not None:
                future.add_done_callback(lambda f: on_cancel() if f.cancelled() else None)

    def report(self, message: str, percentage: int | None = None) -> None:
        self.send("report", types.WorkDoneProgressReport(message=message, percentage=percentage))

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.tokens.pop(self.token, None)
        self.send("end", types.WorkDoneProgressEnd(message=message))
