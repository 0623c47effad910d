"""Results on disk: msgpack files keyed by what was analysed, written atomically.

The key covers the file's bytes, the torch version, the settings that change results and the
checks; an entry also records the hashes of the workspace modules the file imported, and is a
miss when any of them changed. A corrupt entry is removed and counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack

from ..engine.source import file_hash
from ..findings import FileResult, from_wire, to_wire

FORMAT = 1


class ResultCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def key(
        self, content_hash: str, torch_version: str, config: dict[str, Any], checks: list[str]
    ) -> str:
        material = json.dumps(
            [FORMAT, content_hash, torch_version, config, sorted(checks)],
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.msgpack"

    def get(self, key: str) -> FileResult | None:
        p = self._path(key)
        try:
            data = p.read_bytes()
        except OSError:
            return None
        try:
            entry = msgpack.unpackb(data, raw=False, strict_map_key=False)
            if entry.get("format") != FORMAT:
                raise ValueError("format")
            for dep, digest in entry["imports"].items():
                if file_hash(dep) != digest:
                    return None
            return from_wire(entry["result"], FileResult)
        except Exception:
            # Corrupt or from another version: drop it; the next analysis rewrites it.
            try:
                p.unlink()
            except OSError:
                pass
            return None

    def put(self, key: str, result: FileResult) -> None:
        imports = {d: h for d in result.imports if d != result.path and (h := file_hash(d))}
        entry = {"format": FORMAT, "imports": imports, "result": to_wire(result)}
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
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

    def clear(self) -> int:
        n = 0
        if not self.directory.is_dir():
            return 0
        for f in self.directory.rglob("*.msgpack"):
            try:
                f.unlink()
                n += 1
            except OSError:
                pass
        return n
