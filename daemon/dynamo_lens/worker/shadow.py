"""Import the workspace with one file's text replaced, under the same module names, without
writing anything: a rewrite is tried on a shadow of the user's file, never on the file."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..texts.locate import Workspace
from . import settings
from .usercode import import_file, module_name_for, package_path, purge_workspace_modules


class _ShadowLoader(importlib.machinery.SourceFileLoader):
    """The file's module, compiled from the shadow text (no bytecode cache: it is not the
    file's), under the file's own path so that torch's frames name the user's file."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self.text = text

    def get_source(self, fullname: str) -> str:
        return self.text

    def get_code(self, fullname: str) -> types.CodeType:
        return compile(self.text, self.path, "exec", dont_inherit=True)


class _ShadowFinder(importlib.abc.MetaPathFinder):
    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or os.path.realpath(spec.origin) != self.path:
            return None
        spec.loader = _ShadowLoader(fullname, spec.origin, self.text)
        return spec


@contextlib.contextmanager
def shadowed(edited: Path, text: str, ws: Workspace) -> Iterator[None]:
    """While open, importing the workspace gives ``edited`` the module ``text`` makes. The
    workspace's modules are forgotten on entry and on exit, and torch's settings put back as
    they were: nothing the shadow did at import outlives it."""
    path = os.path.realpath(edited)
    saved = settings.save()
    finder = _ShadowFinder(path, text)
    old_lines = linecache.cache.get(path)
    purge_workspace_modules(ws)
    sys.meta_path.insert(0, finder)
    # Torch and tracebacks read source lines by path: they must see the shadow's.
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        purge_workspace_modules(ws)
        settings.restore(saved)
        if old_lines is None:
            linecache.cache.pop(path, None)
        else:
            linecache.cache[path] = old_lines


def import_shadowed(target: Path, edited: Path, ws: Workspace) -> types.ModuleType:
    """``target``'s module inside :func:`shadowed` (``edited`` is imported first, through the
    finder, when ``import_file`` would load ``target`` straight from its path)."""
    if os.path.realpath(target) == os.path.realpath(edited) and package_path(target) is None:
        for p in (str(target.parent), str(ws.root)):
            if p not in sys.path:
                sys.path.insert(0, p)
        name = module_name_for(target, ws)
        spec = importlib.util.spec_from_loader(
            name, _find_loader(target, name), origin=str(target), is_package=False
        )
        if spec is None:
            raise ImportError(f"cannot import {target}")
        spec.has_location = True
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    return import_file(target, ws)


def _find_loader(target: Path, name: str) -> _ShadowLoader:
    for f in sys.meta_path:
        if isinstance(f, _ShadowFinder) and f.path == os.path.realpath(target):
            return _ShadowLoader(name, str(target), f.text)
    raise ImportError(f"{target} is not shadowed")
