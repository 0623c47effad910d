"""Paths recorded on another machine (a cluster's checkout) mapped to this workspace's files:
by ``--path-map REMOTE=LOCAL`` prefixes first, else by the longest matching path suffix."""

from __future__ import annotations

import os
from pathlib import Path

from ..texts.locate import Workspace
from ..texts.source import iter_python_files

# A trace can name millions of distinct paths; the memo of mapped ones stays bounded.
_MEMO = 100_000


class PathMap:
    def __init__(self, ws: Workspace, maps: list[tuple[str, str]] | None = None) -> None:
        self.ws = ws
        self.maps = [(rem.rstrip("/"), loc.rstrip("/")) for rem, loc in maps or []]
        self._by_name: dict[str, list[Path]] | None = None
        self._memo: dict[str, str] = {}

    def _index(self) -> dict[str, list[Path]]:
        if self._by_name is None:
            self._by_name = {}
            for f in iter_python_files([self.ws.root], self.ws.excludes):
                self._by_name.setdefault(f.name, []).append(f)
        return self._by_name

    def local(self, path: str) -> str:
        """The workspace file ``path`` names, by its real path (the one the editor's documents
        have: ``/ws/./m.py`` or a symlink into the workspace is the file itself), else ``path``
        itself (a library, say)."""
        if path in self._memo:
            return self._memo[path]
        out = path
        for remote, local in self.maps:
            if path == remote or path.startswith(remote + "/"):
                out = local + path[len(remote) :]
                break
        else:
            if not (os.path.exists(path) and self.ws.contains(path)):
                out = self._by_suffix(path) or path
        if self.ws.contains(out):
            out = os.path.realpath(out)
        if len(self._memo) < _MEMO:
            self._memo[path] = out
        return out

    def _by_suffix(self, path: str) -> str | None:
        if "site-packages" in path or "dist-packages" in path:
            return None  # a library on the other machine is a library here too
        parts = Path(path).parts
        best, best_len = None, 0
        for cand in self._index().get(parts[-1] if parts else "", []):
            cparts = cand.parts
            n = 0
            while n < min(len(parts), len(cparts)) and parts[-1 - n] == cparts[-1 - n]:
                n += 1
            if n > best_len:
                best, best_len = str(cand), n
        return best
