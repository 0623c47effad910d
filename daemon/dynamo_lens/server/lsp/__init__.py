"""The LSP edge: translation between lsprotocol types and the ``AnalysisService``."""

from __future__ import annotations

from .app import DynamoLensServer

_REGISTERED: set[int] = set()


def register(server: DynamoLensServer) -> None:
    """Every handler on ``server``, once: one module per request family, each registering its
    own (pygls refuses a feature or command registered twice)."""
    from . import commands, features, lifecycle, notebooksync, textsync

    if id(server) in _REGISTERED:
        return
    _REGISTERED.add(id(server))
    for family in (lifecycle, textsync, notebooksync, features, commands):
        family.register(server)


def serve(tcp: str | None = None) -> None:
    from .app import server

    register(server)

    if tcp:
        host, _, port = tcp.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit("--tcp is for debugging on loopback only (127.0.0.1:PORT)")
        from .tcp import serve_tcp, token_from_env

        serve_tcp(server, host, int(port), token_from_env())
    else:
        server.start_io()
    # The client closed our stdin without `exit` (it died, or a test ended): clean up the same.
    server.exit_now(0 if server.protocol._shutdown else 1)
