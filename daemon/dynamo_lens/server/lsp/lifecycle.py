"""initialize, initialized, shutdown, exit, settings changes, and leaving with the client."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import threading
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest

from .app import DynamoLensServer
from .convert import uri_to_path

log = logging.getLogger(__name__)
_PARENT_POLL = 1.0


def on_initialize(ls: DynamoLensServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    if ls.initialized:
        # One session per daemon: a second initialize could re-declare trust and roots.
        raise JsonRpcInvalidRequest("the server is already initialized")
    if ls.tcp_token is not None and not hmac.compare_digest(
        str(opts.get("token", "")), ls.tcp_token
    ):
        log.error("initialize without the right token: leaving")
        asyncio.get_event_loop().call_later(0.2, ls.exit_now, 1)
        raise JsonRpcInvalidRequest("a token is required (see the daemon's stderr)")
    ls.initialized = True
    ls.trusted = bool(opts.get("trusted", True))
    settings = opts.get("settings")
    ls.settings = settings if isinstance(settings, dict) else {}
    folder = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
    root = uri_to_path(folder) if folder else None
    if root is not None:
        ls.root = Path(root)
    if params.process_id:
        _exit_with(ls, params.process_id)


def _exit_with(ls: DynamoLensServer, pid: int) -> None:
    """The spec: a server exits when the client process that started it is gone, even if it
    never said ``exit`` (a killed editor), so no worker outlives it."""

    def watch() -> None:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.warning("client process %d is gone: exiting", pid)
                ls.exit_now(1)
                return
            except PermissionError:
                pass  # alive, another user's
            threading.Event().wait(_PARENT_POLL)

    threading.Thread(target=watch, name="client-watch", daemon=True).start()


async def on_initialized(ls: DynamoLensServer, params: types.InitializedParams) -> None:
    import asyncio

    ls.loop = asyncio.get_running_loop()
    await _pull_settings(ls)
    ls.start_service()


async def _pull_settings(ls: DynamoLensServer) -> None:
    caps = ls.client_capabilities.workspace
    if caps is None or not caps.configuration:
        return
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="dynamoLens")])
        )
    except Exception as exc:  # a client that cannot answer keeps the init options
        log.warning("workspace/configuration failed: %s", exc)
        return
    if result and isinstance(result[0], dict):
        ls.settings = {**ls.settings, **result[0]}


# A burst of setting changes (a settings sync, a script, typing in the settings UI) restarts
# the service once, after it settles.
_CONFIG_SETTLE = 0.3


async def on_config(ls: DynamoLensServer, params: types.DidChangeConfigurationParams) -> None:
    import asyncio

    if isinstance(params.settings, dict) and isinstance(params.settings.get("dynamoLens"), dict):
        ls.settings = {**ls.settings, **params.settings["dynamoLens"]}
    await _pull_settings(ls)
    if ls.pending_restart is not None:
        ls.pending_restart.cancel()
    ls.pending_restart = asyncio.get_running_loop().call_later(_CONFIG_SETTLE, ls.apply_settings)


def on_shutdown(ls: DynamoLensServer, *args: object) -> None:
    # Runs, workers and the watcher stop now; pygls answers the request and waits for `exit`.
    ls.stop_runs()
    ls.stop_service()


def on_exit(ls: DynamoLensServer, *args: object) -> None:
    ls.exit_now(0 if ls.protocol._shutdown else 1)


def register(ls: DynamoLensServer) -> None:
    ls.feature(types.INITIALIZE)(on_initialize)
    ls.feature(types.INITIALIZED)(on_initialized)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_config)
    ls.feature(types.SHUTDOWN)(on_shutdown)
    ls.feature(types.EXIT)(on_exit)
