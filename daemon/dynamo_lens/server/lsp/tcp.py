"""``serve --tcp``: the language server on a loopback socket, for debugging with a client that
is not VS Code. Secured as debug adapters are:

- one client only: the listening socket closes once the first connection is accepted, so a
  second local process cannot take the session over;
- a random token: ``initialize`` must carry it in ``initializationOptions.token`` (printed on
  stderr at start, or taken from ``DYNAMO_LENS_TOKEN``); without it the daemon answers an error
  and leaves, before any workspace code could run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
import threading

from pygls.io_ import run_async

from .app import DynamoLensServer

log = logging.getLogger(__name__)


def token_from_env() -> str:
    token = os.environ.get("DYNAMO_LENS_TOKEN") or secrets.token_urlsafe(24)
    print(
        f"dynamo-lens: pass initializationOptions.token = {token!r} (or set DYNAMO_LENS_TOKEN)",
        file=sys.stderr,
        flush=True,
    )
    return token


def serve_tcp(server: DynamoLensServer, host: str, port: int, token: str) -> None:
    server.tcp_token = token
    stop = threading.Event()
    server._stop_event = stop  # pygls' shutdown sets it to end the read loop

    async def main() -> None:
        finished = asyncio.Event()
        taken = False

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal taken
            if taken:  # raced the close below: never a second client
                writer.close()
                return
            taken = True
            listener.close()
            server.protocol.set_writer(writer)
            try:
                await run_async(
                    stop_event=stop,
                    reader=reader,
                    protocol=server.protocol,
                    logger=log,
                    error_handler=server.report_server_error,
                )
            finally:
                finished.set()

        listener = await asyncio.start_server(connection, host, port)
        addrs = ", ".join(str(s.getsockname()) for s in listener.sockets)
        print(f"dynamo-lens: listening on {addrs} for one client", file=sys.stderr, flush=True)
        await finished.wait()

    asyncio.run(main())
