"""Where a live kernel (kernel/extension.py) leaves its findings for the editor's daemon
(server/notebooks.py): one JSON file per notebook, in the user's cache, named by the notebook's
real path. Neither side knows the other's workspace; both know the notebook."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def kernel_findings(notebook: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(os.path.realpath(notebook).encode()).hexdigest()[:20]
    return Path(base) / "dynamo-lens" / "kernels" / f"{digest}.json"
