"""Writing a user's file (engine/filewrite.py, issue 28): atomic, only over the bytes that were
verified, every byte outside the rewritten lines kept, never through a link out of the
workspace. No torch: the rewrites here are written by hand."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from dynamo_lens.engine import filewrite
from dynamo_lens.engine.filewrite import (
    FileChanged,
    WriteError,
    read_source,
    replace_file,
    workspace_lock,
)
from dynamo_lens.fixes.catalogue import Rewrite
from dynamo_lens.fixes.rewrite import source_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SRC = """import torch


def f(x):
    h = x * 2
    print(h)
    return h
"""
PRINT_LINE = 6


def _guard(path: Path) -> Rewrite:
    return Rewrite(
        "guard-output",
        "guard",
        str(path),
        PRINT_LINE,
        PRINT_LINE,
        "    if not torch.compiler.is_compiling():\n        print(h)\n",
        exact=True,
    )


def _write(tmp: Path, data: bytes, name: str = "m.py") -> Path:
    p = tmp / name
    p.write_bytes(data)
    return p


def _apply(path: Path, root: Path) -> bytes:
    src = read_source(path)
    replace_file(src, _guard(path).apply(src.text), root)
    return path.read_bytes()


def test_crlf_mixed_endings_bom_tabs_and_a_missing_last_newline_are_kept(tmp_path: Path) -> None:
    crlf = SRC.replace("\n", "\r\n").encode()
    out = _apply(_write(tmp_path, crlf), tmp_path)
    assert out == crlf.replace(
        b"    print(h)\r\n", b"    if not torch.compiler.is_compiling():\r\n        print(h)\r\n"
    )
    # Mixed: the new lines end as the replaced line did; every other line keeps its own.
    mixed = SRC.replace("h = x * 2\n", "h = x * 2\r\n").replace("print(h)\n", "print(h)\r").encode()
    out = _apply(_write(tmp_path, mixed), tmp_path)
    assert b"    h = x * 2\r\n" in out and b"is_compiling():\r        print(h)\r    return" in out
    assert out.count(b"\r\n") == 1 and out.endswith(b"    return h\n")
    # A BOM stays, and nothing else changes around the rewrite.
    bom = b"\xef\xbb\xbf" + SRC.encode()
    out = _apply(_write(tmp_path, bom), tmp_path)
    assert out.startswith(b"\xef\xbb\xbfimport torch\n") and out.count(b"\xef\xbb\xbf") == 1
    # The last line without a newline stays without one.
    last = SRC.replace("    print(h)\n    return h\n", "    return h\n    print(h)").encode()
    p = _write(tmp_path, last)
    src = read_source(p)
    rw = Rewrite("r", "t", str(p), 7, 7, "    if True:\n        print(h)\n", exact=True)
    replace_file(src, rw.apply(src.text), tmp_path)
    assert p.read_bytes().endswith(b"    if True:\n        print(h)")
    # Tabs: a guard under tab indentation indents with a tab; a string's own lines stay.
    import ast

    from dynamo_lens.fixes.rewrite import eager_only

    src = 'def f(h):\n\t\tprint(h, """a\n  b""")\n'
    stmt = ast.parse(src.replace("\t\t", " ")).body[0].body[0]  # type: ignore[attr-defined]
    assert eager_only(src, stmt) == (
        '\t\tif not torch.compiler.is_compiling():\n\t\t\tprint(h, """a\n  b""")\n'
    )


def test_a_coding_line_is_kept_and_latin_1_bytes_stay_latin_1(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + SRC.replace("h = x * 2", "h = x * 2  # café")
    p = _write(tmp_path, text.encode("latin-1"))
    src = read_source(p)
    assert src.encoding == "iso-8859-1" and "café" in src.text
    rw = Rewrite("r", "t", str(p), PRINT_LINE + 1, PRINT_LINE + 1, "    pass\n", exact=True)
    replace_file(src, rw.apply(src.text), tmp_path)
    out = p.read_bytes()
    assert b"caf\xe9" in out and "café".encode() not in out
    # A character latin-1 cannot hold is refused, the file unchanged.
    rw = Rewrite("r", "t", str(p), PRINT_LINE + 1, PRINT_LINE + 1, "    s = '€'\n", exact=True)
    src = read_source(p)
    with pytest.raises(WriteError, match="cannot hold"):
        replace_file(src, rw.apply(src.text), tmp_path)
    assert p.read_bytes() == out


def test_lines_are_counted_as_pythons_tokenizer_counts_them() -> None:
    # \f, \v, U+2028 and U+2029 are no line breaks for Python: str.splitlines would shift
    # every line after them.
    src = 'import torch\nx = "a\u2028b"  # \x0c\v\u2029 still line 2\ny = 1\r\nprint(y)\rz = 2\n'
    assert [ln.rstrip("\r\n") for ln in source_lines(src)][2:] == ["y = 1", "print(y)", "z = 2"]
    rw = Rewrite("r", "t", "m.py", 4, 4, "pass\n", exact=True)
    assert rw.apply(src) == src.replace("print(y)\r", "pass\r")


def test_a_full_disk_leaves_the_file_whole_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, SRC.encode())
    real_write = os.write
    calls = []

    def full(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:10]))  # a short write first, then ENOSPC
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(filewrite.os, "write", full)
    src = read_source(p)
    with pytest.raises(WriteError, match="no space left on the device; the file is unchanged"):
        replace_file(src, _guard(p).apply(src.text), tmp_path)
    assert p.read_bytes() == SRC.encode()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.py"]  # no temporary file left


_EFBIG = """
import resource, signal, sys
from pathlib import Path
from dynamo_lens.engine.filewrite import WriteError, read_source, replace_file
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the process dies: EFBIG instead
p = Path(sys.argv[1])
src = read_source(p)
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
try:
    replace_file(src, src.text + "# more\\n" * 400, p.parent)
except WriteError as exc:
    print(exc)
"""


def test_a_file_size_limit_leaves_the_file_whole(tmp_path: Path) -> None:
    data = (SRC * 20).encode()  # over 1024 bytes before the rewrite, under after the cut
    assert len(data) > 1024
    p = _write(tmp_path, data)
    out = subprocess.run(
        [sys.executable, "-c", _EFBIG, str(p)], capture_output=True, text=True, check=True
    ).stdout
    assert "file-size limit" in out and "unchanged" in out
    assert p.read_bytes() == data
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.py"]


_KILLED = """
import sys
from pathlib import Path
from dynamo_lens.engine.filewrite import read_source, replace_file
p = Path(sys.argv[1])
src = read_source(p)

def stop_here():
    print("written, not renamed", flush=True)
    sys.stdin.readline()  # killed while waiting here

replace_file(src, "x = 1\\n" * 100000, p.parent, before_rename=stop_here)
"""


def test_a_kill_during_the_write_leaves_the_file_whole(tmp_path: Path) -> None:
    p = _write(tmp_path, SRC.encode())
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(p)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "written, not renamed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert p.read_bytes() == SRC.encode()


def test_a_file_that_changed_after_it_was_read_is_not_written(tmp_path: Path) -> None:
    p = _write(tmp_path, SRC.encode())
    src = read_source(p)
    p.write_bytes(b"# the user's line\n" + SRC.encode())
    with pytest.raises(FileChanged, match="your edit is kept"):
        replace_file(src, _guard(p).apply(src.text), tmp_path)
    assert p.read_bytes() == b"# the user's line\n" + SRC.encode()
    # Also at the very last moment, between the temporary file and the rename.
    src = read_source(p)

    def edit() -> None:
        p.write_bytes(b"# typed just now\n" + SRC.encode())

    with pytest.raises(FileChanged):
        replace_file(src, "whatever\n", tmp_path, before_rename=edit)
    assert p.read_bytes() == b"# typed just now\n" + SRC.encode()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.py"]


def test_never_through_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    target = _write(outside, SRC.encode())
    (ws / "link.py").symlink_to(target)
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    for name in ("link.py", "linked/m.py"):
        src = read_source(ws / name)
        with pytest.raises(WriteError, match="outside the workspace"):
            replace_file(src, "x = 1\n", ws)
    assert target.read_bytes() == SRC.encode()
    # A link inside the workspace stays a link; the file it names is written.
    inner = _write(ws, SRC.encode(), "real.py")
    (ws / "alias.py").symlink_to(inner)
    src = read_source(ws / "alias.py")
    replace_file(src, _guard(inner).apply(src.text), ws)
    assert (ws / "alias.py").is_symlink() and b"is_compiling" in inner.read_bytes()


def test_read_only_and_hard_linked_files_are_refused_and_the_mode_is_kept(tmp_path: Path) -> None:
    p = _write(tmp_path, SRC.encode())
    p.chmod(0o444)
    src = read_source(p)
    with pytest.raises(WriteError, match="read-only"):
        replace_file(src, "x = 1\n", tmp_path)
    assert p.read_bytes() == SRC.encode()
    p.chmod(0o754)
    os.link(p, tmp_path / "other.py")
    with pytest.raises(WriteError, match="hard links"):
        replace_file(read_source(p), "x = 1\n", tmp_path)
    (tmp_path / "other.py").unlink()
    try:  # where the file system keeps extended attributes (ACLs are some), they stay
        os.setxattr(p, "user.note", b"kept")
    except OSError:
        pass
    src = read_source(p)
    replace_file(src, _guard(p).apply(src.text), tmp_path)
    assert stat.S_IMODE(p.stat().st_mode) == 0o754
    if "user.note" in os.listxattr(p) or not hasattr(os, "listxattr"):
        assert os.getxattr(p, "user.note") == b"kept"


def test_a_second_writer_of_the_workspace_waits_for_the_first(tmp_path: Path) -> None:
    waiting, order = threading.Event(), []

    def second() -> None:
        with workspace_lock(tmp_path, on_wait=waiting.set):
            order.append("second")

    with workspace_lock(tmp_path):
        t = threading.Thread(target=second)
        t.start()
        assert waiting.wait(timeout=60)  # it found the lock taken
        order.append("first")
    t.join(timeout=60)
    assert order == ["first", "second"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edit_at=st.sampled_from(["none", "after read", "before rename"]),
    line=st.integers(min_value=1, max_value=8),
    typed=st.text(alphabet="abc #()=\r\n\t", min_size=1, max_size=12),
    crlf=st.booleans(),
)
def test_an_edit_during_verification_never_loses_a_byte(
    tmp_path: Path, edit_at: str, line: int, typed: str, crlf: bool
) -> None:
    """Whatever the user types, wherever, while a rewrite is verified: the file ends as the
    user left it, or, if nothing was typed after it was read, as the rewrite of what was read."""
    base = SRC.replace("\n", "\r\n") if crlf else SRC
    p = _write(tmp_path, base.encode(), "prop.py")
    src = read_source(p)
    lines = source_lines(base)
    k = min(line, len(lines)) - 1
    edited = "".join([*lines[:k], lines[k][:2] + typed + lines[k][2:], *lines[k + 1 :]]).encode()
    if edited == base.encode():
        edit_at = "none"

    def edit() -> None:
        p.write_bytes(edited)

    if edit_at == "after read":
        edit()
    new = _guard(p).apply(src.text)
    try:
        replace_file(src, new, tmp_path, before_rename=edit if edit_at == "before rename" else None)
    except FileChanged:
        assert edit_at != "none"
        assert p.read_bytes() == edited
    else:
        assert edit_at == "none"
        assert p.read_bytes() == new.encode()
    assert not [x for x in tmp_path.iterdir() if x.name.endswith(".tmp")]


def test_what_is_not_python_source_is_a_clear_error(tmp_path: Path) -> None:
    bad = _write(tmp_path, b"# -*- coding: nope -*-\nx = 1\n")
    with pytest.raises(WriteError, match="not valid Python source"):
        read_source(bad)
    os.mkfifo(tmp_path / "fifo.py")
    with pytest.raises(WriteError, match="not a regular file"):
        read_source(tmp_path / "fifo.py")
    with pytest.raises(WriteError, match="cannot read"):
        read_source(tmp_path / "missing.py")


def test_an_edit_in_the_instant_before_the_swap_is_swapped_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last look says unchanged, then the editor saves: the two files swap in one step,
    what was swapped out is read, and it goes back (the user's edit is kept)."""
    p = _write(tmp_path, SRC.encode())
    src = read_source(p)
    real_digest = filewrite._digest_now
    looks = []

    def stale_last_look(path: str) -> str | None:
        looks.append(path)
        # The first two looks at the file (before the write, the last look) miss the save.
        return src.digest if len(looks) <= 2 else real_digest(path)

    monkeypatch.setattr(filewrite, "_digest_now", stale_last_look)
    with pytest.raises(FileChanged):
        replace_file(
            src,
            _guard(p).apply(src.text),
            tmp_path,
            before_rename=lambda: p.write_text("# saved\n"),
        )
    assert p.read_bytes() == b"# saved\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.py"]


def test_a_folder_that_takes_no_new_file_is_a_clear_error_and_stale_temps_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, SRC.encode())
    left = tmp_path / f".m.py.abcd1234{filewrite.TEMP_SUFFIX}"  # a killed run's
    left.write_text("half a rewrite")
    (tmp_path / ".m.py.keep.tmp").write_text("not ours")

    def no_room(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(filewrite.tempfile, "mkstemp", no_room)
    src = read_source(p)
    with pytest.raises(
        WriteError, match=r"could not write .*Permission denied; the file is unchanged"
    ):
        replace_file(src, "x = 1\n", tmp_path)
    assert p.read_bytes() == SRC.encode()
    monkeypatch.undo()
    replace_file(src, _guard(p).apply(src.text), tmp_path)
    assert sorted(x.name for x in tmp_path.iterdir()) == [".m.py.keep.tmp", "m.py"]
