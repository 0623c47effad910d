"""workspace/executeCommand: the ``dynamoLens.server.*`` commands (docs/lsp-contract.md), one
module per family, each registering its handlers in ``register``.

Arguments are typed: pygls structures each one from its annotation and answers a malformed
call with InvalidParams. Handlers translate; what to run, allow or apply is the service's
(server/). Long commands run on the daemon's command threads (``kit.background``).
"""

from __future__ import annotations

from ..app import DynamoLensServer
from . import benchmark, checks, fixes, runs


def register(ls: DynamoLensServer) -> None:
    for family in (checks, runs, fixes, benchmark):
        family.register(ls)
