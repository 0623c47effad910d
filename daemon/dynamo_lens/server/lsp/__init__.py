"""The LSP edge: translation between lsprotocol types and the ``AnalysisService``."""

from __future__ import annotations


def serve(tcp: str | None = None) -> None:
    # Importing the handler modules registers them on the one server object.
    from . import commands, features, lifecycle, notebooksync, textsync  # noqa: F401
    from .app import server

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
