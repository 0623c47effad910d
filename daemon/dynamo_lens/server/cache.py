"""Results on disk: msgpack files keyed by what was analysed, written atomically.

The key covers the file's path and bytes, the torch version, the settings that change results
and the checks; an entry also records the hashes of the workspace modules the file imported,
and is a miss when any of them changed. A corrupt entry is removed and counts as a miss.

The cache is ours alone and trusts nothing it reads:

- it lives in the user's cache folder, keyed by workspace (``default_directory``), so a
  repository cannot ship it, or a symlink in its place;
- no path through a symlink is read, written or deleted, and "clear" deletes only the entry
  names this module writes;
- an entry is used only if it is about the requested file, every path it names is inside the
  workspace, and every import it lists is a regular file (a FIFO would block the read).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import msgpack

from ..findings import FileResult, from_wire, to_wire
from ..runs.loaded import LoadedRun
from ..texts.source import file_hash

# 3: recompile findings carry ``scalar_arg`` (what a fix passes as a tensor); older entries
# lack it, so they are analysed again rather than shown without the fix. 4: a number passed
# to a keyword-only parameter, or guarded with an exponent (``eps == 1e-05``), has it too.
FORMAT = 4
_ENTRY = re.compile(r"^[0-9a-f]{64}\.msgpack$")
_SHARD = re.compile(r"^[0-9a-f]{2}$")
RUN_ENTRY = "last-run.msgpack"


def default_directory(root: Path) -> Path:
    """``$XDG_CACHE_HOME/dynamo-lens/<workspace digest>``: outside the workspace."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(Path(os.path.realpath(root))).encode()).hexdigest()[:20]
    return base / "dynamo-lens" / digest


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class ResultCache:
    def __init__(self, directory: Path, workspace: Path | None = None) -> None:
        self.directory = Path(os.path.abspath(directory))
        self.workspace = Path(os.path.realpath(workspace)) if workspace else None

    def key(
        self,
        content_hash: str,
        torch_version: str,
        config: dict[str, Any],
        checks: list[str],
        path: str = "",
    ) -> str:
        # The path too: a copy or a rename has its own targets' names and its own findings.
        material = json.dumps(
            [
                FORMAT,
                os.path.realpath(path) if path else "",
                content_hash,
                torch_version,
                config,
                sorted(checks),
            ],
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def _safe_dir(self, d: Path) -> bool:
        """``d`` is the cache folder or below it, and no part of it is a symlink."""
        try:
            rel = d.relative_to(self.directory)
        except ValueError:
            return False
        chain = [self.directory.joinpath(*rel.parts[:i]) for i in range(len(rel.parts) + 1)]
        return not any(p.is_symlink() for p in chain)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.msgpack"

    def _inside(self, path: str) -> bool:
        if self.workspace is None:
            return True
        real = os.path.realpath(path)
        return real == str(self.workspace) or real.startswith(str(self.workspace) + os.sep)

    def _entry(self, p: Path) -> dict[str, Any] | None:
        """The entry at ``p``: None when there is none (or it is not ours to read: a symlink,
        not a regular file); raises when it is corrupt or from another format."""
        if not self._safe_dir(p.parent) or p.is_symlink() or not _regular(str(p)):
            return None
        try:
            data = p.read_bytes()
        except OSError:
            return None
        entry = msgpack.unpackb(data, raw=False, strict_map_key=False)
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            raise ValueError("format")
        return entry

    def _drop(self, p: Path) -> bool:
        if not self._safe_dir(p.parent) or p.is_symlink() or not p.is_file():
            return False
        try:
            p.unlink()
            return True
        except OSError:
            return False

    def get(self, key: str, path: str | None = None) -> FileResult | None:
        p = self._path(key)
        try:
            entry = self._entry(p)
            if entry is None:
                return None
            result = from_wire(entry["result"], FileResult)
            if not self._valid(entry, result, path):
                raise ValueError("an entry about another file or outside the workspace")
            for dep, digest in entry["imports"].items():
                if file_hash(dep) != digest:
                    return None
            return result
        except Exception:
            # Corrupt, forged or from another version: drop it; the next analysis rewrites it.
            self._drop(p)
            return None

    def _valid(self, entry: dict[str, Any], result: FileResult, path: str | None) -> bool:
        if path is not None and os.path.realpath(result.path) != os.path.realpath(path):
            return False
        deps = entry.get("imports")
        if not isinstance(deps, dict):
            return False
        if not all(isinstance(d, str) and self._inside(d) and _regular(d) for d in deps):
            return False
        return all(self._inside(f.path) for f in result.all_findings())

    def put(self, key: str, result: FileResult) -> None:
        imports = {
            d: h
            for d in result.imports
            if d != result.path and self._inside(d) and _regular(d) and (h := file_hash(d))
        }
        entry = {"format": FORMAT, "imports": imports, "result": to_wire(result)}
        self._write(self._path(key), entry)

    def _write(self, p: Path, entry: dict[str, Any]) -> None:
        """Atomically: a reader sees the old entry or the new one, never half of one."""
        p.parent.mkdir(parents=True, exist_ok=True)
        if not self._safe_dir(p.parent):
            raise OSError(f"refusing to write through a symlink: {p.parent}")
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(msgpack.packb(entry, use_bin_type=True))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    # -- the last run's findings (kept across restarts until cleared) ----------------------
    def put_run(self, run: LoadedRun) -> None:
        self._write(self.directory / RUN_ENTRY, {"format": FORMAT, "run": to_wire(run)})

    def get_run(self) -> LoadedRun | None:
        """The stored run, or None. Like an analysis entry: nothing outside the workspace."""
        try:
            entry = self._entry(self.directory / RUN_ENTRY)
            if entry is None:
                return None
            run = from_wire(entry["run"], LoadedRun)
            named = [r.path for r in run.results] + [row.path for row in run.summary]
            if not all(self._inside(p) for p in named):
                raise ValueError("a run about files outside the workspace")
            return run
        except Exception:
            self.clear_run()
            return None

    def clear_run(self) -> bool:
        return self._drop(self.directory / RUN_ENTRY)

    def clear(self) -> int:
        """Delete this cache's entries: only names it writes, never through a symlink."""
        n = 0
        if not self.directory.is_dir() or not self._safe_dir(self.directory):
            return 0
        with os.scandir(self.directory) as shards:
            for shard in shards:
                if not _SHARD.match(shard.name) or not shard.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(shard.path) as entries:
                    for e in entries:
                        if _ENTRY.match(e.name) and e.is_file(follow_symlinks=False):
                            try:
                                os.unlink(e.path)
                                n += 1
                            except OSError:
                                pass
        return n
