"""Whether a workspace declares its own targets, which decides zero-config guessing.

Guessing is for what the user has not declared. Once any file has a ``compile_example`` (or
configuration names targets), the user has chosen what to compile, and constructing every
``nn.Module`` in sight (helpers at their default 1024² sizes, blocks that need arguments) only
makes noise: then only a class that nothing else in the workspace uses (a top-level model that
no declared target can reach) is guessed.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

from ..config import EXAMPLE_DEF
from ..texts.source import iter_python_files

_WORD = re.compile(rb"[A-Za-z_]\w*")
_CLASS = re.compile(rb"(?:^|(?<=\r))\f*class\s+(\w+)", re.M)


class _Entry:
    __slots__ = ("declares", "stamp", "words")

    def __init__(self, stamp: tuple[int, int], data: bytes) -> None:
        self.stamp = stamp
        self.declares = bool(EXAMPLE_DEF.search(data))
        self.words = Counter(_WORD.findall(data))


class Declarations:
    def __init__(self, root: Path, excludes: list[str]) -> None:
        self.root = root
        self.excludes = excludes
        # Re-read only files whose (mtime, size) changed since the last scan.
        self._files: dict[str, _Entry] = {}

    def _scan(self) -> dict[str, _Entry]:
        current: dict[str, _Entry] = {}
        for path in iter_python_files([self.root], self.excludes):
            key = str(path)
            try:
                st = os.stat(key)
                stamp = (st.st_mtime_ns, st.st_size)
                old = self._files.get(key)
                current[key] = (
                    old if old and old.stamp == stamp else _Entry(stamp, path.read_bytes())
                )
            except OSError:
                continue
        self._files = current
        return current

    def guess_policy(self, data: bytes) -> tuple[bool, list[str]]:
        """(guess at all, classes of this file not to guess) for a file's bytes."""
        files = self._scan()
        if not any(e.declares for e in files.values()):
            return True, []
        total: Counter[bytes] = Counter()
        for e in files.values():
            total.update(e.words)
        # A class named anywhere beyond its own definition is a building block of something.
        used = [n.decode() for n in _CLASS.findall(data) if total[n] > 1]
        unused = [n for n in _CLASS.findall(data) if total[n] <= 1]
        return bool(unused), used
