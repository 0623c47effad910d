"""Daemon robustness: the result cache never deletes or reads what is not its own."""

from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest
from dynamo_lens.findings import FileResult, Finding, Kind, Severity, to_wire
from dynamo_lens.server.cache import FORMAT, ResultCache, default_directory


def _result(path: Path) -> FileResult:
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, str(path), 1, 1, 1, 2, "m")
    return FileResult(str(path), "h", findings=[f], ran=True)


def test_the_cache_lives_outside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Put back as it was after the test (conftest's folder): the later tests of this process
    # must not write their caches into the user's ~/.cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    d = default_directory(tmp_path / "ws")
    assert d.is_relative_to(tmp_path / "xdg") and not d.is_relative_to(tmp_path / "ws")


def test_clear_deletes_only_its_own_entries_and_never_through_a_symlink(tmp_path: Path) -> None:
    user = tmp_path / "precious"
    user.mkdir()
    name = "ab" + "0" * 62 + ".msgpack"
    (user / name).write_bytes(b"user data")  # named like an entry, but not ours
    (user / "notes.msgpack").write_bytes(b"user data")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "ab").symlink_to(user, target_is_directory=True)  # a shard that is a link
    (cache_dir / "stray.msgpack").write_bytes(b"not an entry name")
    cache = ResultCache(cache_dir)
    assert cache.clear() == 0
    assert (user / name).exists() and (user / "notes.msgpack").exists()
    assert (cache_dir / "stray.msgpack").exists()
    # The whole cache folder a symlink (as a repository could ship): nothing is touched.
    linked = tmp_path / "linked"
    linked.symlink_to(user, target_is_directory=True)
    assert ResultCache(linked).clear() == 0 and (user / name).exists()


def test_writes_never_go_through_a_symlink(tmp_path: Path) -> None:
    user = tmp_path / "precious"
    user.mkdir()
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    cache = ResultCache(cache_dir)
    key = cache.key("h", "2.13", {}, ["breaks"], str(tmp_path / "m.py"))
    (cache_dir / key[:2]).symlink_to(user, target_is_directory=True)
    try:
        cache.put(key, _result(tmp_path / "m.py"))
    except OSError:
        pass
    assert list(user.iterdir()) == []


def _forge(cache: ResultCache, key: str, result: FileResult, imports: dict[str, str]) -> None:
    p = cache.directory / key[:2] / f"{key}.msgpack"
    p.parent.mkdir(parents=True, exist_ok=True)
    entry = {"format": FORMAT, "imports": imports, "result": to_wire(result)}
    p.write_bytes(msgpack.packb(entry, use_bin_type=True))


def test_forged_entries_are_dropped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    m = ws / "m.py"
    m.write_text("x = 1\n")
    cache = ResultCache(tmp_path / "cache", ws)
    key = cache.key("h", "2.13", {}, ["breaks"], str(m))
    # An entry about /etc/passwd served for m.py.
    _forge(cache, key, _result(Path("/etc/passwd")), {})
    assert cache.get(key, str(m)) is None
    # An entry whose imports name a FIFO: reading it would block forever.
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    _forge(cache, key, _result(m), {str(fifo): "x"})
    assert cache.get(key, str(m)) is None
    # An import outside the workspace.
    _forge(cache, key, _result(m), {"/etc/hostname": "x"})
    assert cache.get(key, str(m)) is None
    # A genuine entry still works.
    cache.put(key, _result(m))
    got = cache.get(key, str(m))
    assert got is not None and got.path == str(m)


def test_copies_have_their_own_entries(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    a = cache.key("same-bytes", "2.13", {}, ["breaks"], str(tmp_path / "a.py"))
    b = cache.key("same-bytes", "2.13", {}, ["breaks"], str(tmp_path / "b.py"))
    assert a != b
