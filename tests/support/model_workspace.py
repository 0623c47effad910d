"""A workspace of one module, ``model.py``, for the worker tests that import it in this process
(the verifier's parts, run without a worker): nothing of an earlier test's ``model`` stays
imported."""

from __future__ import annotations

import sys
from pathlib import Path

from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker.usercode import purge_workspace_modules


def model_workspace(root: Path, text: str) -> Workspace:
    (root / "model.py").write_text(text)
    ws = Workspace(root)
    purge_workspace_modules(ws)
    sys.modules.pop("model", None)
    return ws
