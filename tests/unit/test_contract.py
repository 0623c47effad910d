"""docs/lsp-contract.md is the contract between daemon and client: the commands, the status
notification and the settings it names are exactly those the code registers and reads, on both
sides, and package.json's setting defaults are the daemon's."""

from __future__ import annotations

import json
import re
from typing import Any

from conftest import REPO
from dynamo_lens.config import Config, _norm_key
from dynamo_lens.server.lsp import app, register

register(app.server)

DOC = (REPO / "docs" / "lsp-contract.md").read_text()
PROTOCOL_TS = (REPO / "extension" / "src" / "protocol.ts").read_text()
PACKAGE = json.loads((REPO / "package.json").read_text())
# Settings only the client reads (never sent to the daemon; the contract says so).
CLIENT_ONLY = {"interpreter", "trace.server", "runCommand"}


def _settings() -> dict[str, Any]:
    conf = PACKAGE["contributes"]["configuration"]
    props: dict[str, Any] = {}
    for block in conf if isinstance(conf, list) else [conf]:
        props.update(block["properties"])
    return {k.removeprefix("dynamoLens."): v for k, v in props.items()}


def test_server_commands_match_the_doc_and_the_client() -> None:
    registered = set(app.server.protocol.fm.commands)
    documented = set(re.findall(r"^\| `(dynamoLens\.server\.\w+)`", DOC, re.M))
    client = set(re.findall(r"'(dynamoLens\.server\.\w+)'", PROTOCOL_TS))
    typed = PROTOCOL_TS.split("export interface ServerCommands {", 1)[1].split("\n}", 1)[0]
    typed_names = {f"dynamoLens.server.{k}" for k in re.findall(r"^  (\w+): \{", typed, re.M)}
    assert registered == documented, "docs/lsp-contract.md's command table is out of date"
    assert client == registered, "extension/src/protocol.ts's SERVER_COMMANDS and the daemon differ"
    assert typed_names == registered, "protocol.ts's ServerCommands types and the daemon differ"


def test_status_notification_name_is_shared() -> None:
    assert f"## Notification `{app.STATUS}`" in DOC
    assert f"STATUS_NOTIFICATION = '{app.STATUS}'" in PROTOCOL_TS


def test_documented_settings_are_package_json_settings_and_the_daemon_reads_them() -> None:
    keys = DOC.split("Keys (camelCase as in package.json, which holds the defaults):", 1)[1]
    keys = keys.split("\n\n", 1)[0]
    documented = set(re.findall(r"`(\w+)` \(", keys))
    sent = set(_settings()) - CLIENT_ONLY
    assert documented == sent, "the contract's settings list and package.json differ"
    fields = set(Config.__dataclass_fields__)
    unread = sorted(k for k in sent if _norm_key(k) not in fields)
    assert not unread, f"settings the daemon does not read: {unread}"


def test_package_json_defaults_are_the_daemons_defaults() -> None:
    defaults = Config()
    for key, schema in _settings().items():
        if key in CLIENT_ONLY or "default" not in schema:
            continue
        ours = getattr(defaults, _norm_key(key))
        assert schema["default"] == ours, f"dynamoLens.{key}: package.json {schema['default']!r}"
