"""What the daemon's parts share: the workspace, its settings and trust, the open documents,
the result cache, the worker engine and the ways back to the client. Plain state; each part
(``analyses``, ``hints``, ``queries``, ``lastrun``) holds one and knows nothing of the others'
insides.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..engine.analysis import Engine
from ..fixes.boundary import compile_arguments
from ..texts.locate import Workspace
from .cache import ResultCache
from .documents import Documents

LogFn = Callable[[str], None]


def torch_version() -> str:
    """The torch the daemon's interpreter has, without importing it ("none": not installed)."""
    import importlib.metadata  # only here: it costs start-up time

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


@dataclass
class Context:
    root: Path
    config: Config
    trusted: bool
    docs: Documents
    cache: ResultCache
    log: LogFn
    python: str | None = None  # the interpreter the worker runs (None: the daemon's own)
    torch_version: str = field(default_factory=torch_version)
    engine: Engine | None = None  # None: Restricted Mode, no torch, or not started yet

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.root, self.config.excludes)

    @property
    def compile_args(self) -> str:
        """``torch.compile``'s arguments as the analysis compiles targets: for a fix rule that
        writes a compile of its own."""
        c = self.config
        return compile_arguments(c.backend, c.mode, c.dynamic)
