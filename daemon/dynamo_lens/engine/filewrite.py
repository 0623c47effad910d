"""Writing a user's source file as a transaction over the exact bytes that were verified.

A rewrite is verified for one text of a file; it may be written only over that text's bytes:
- the file is read once (:func:`read_source`): bytes, their hash, the text decoded as Python
  decodes it (PEP 263, a BOM), every line ending kept;
- the new bytes are the new text encoded the same way (BOM and coding line kept), and only if the
  original text encodes back to exactly its bytes;
- the write (:func:`replace_file`) goes to a temporary file in the same folder, fsynced, with
  the original's mode (and owner, where it can be kept), then renamed over the real file, and the
  folder fsynced: a kill, a full disk or a file-size limit leaves the original whole;
- right before the rename the file's bytes are hashed again: a file that changed since it was
  read (the user typed, the editor saved, a second run wrote) is not written;
- the real path must be inside the workspace: a link that leads out of it is never written
  through, and a link inside it is kept (its target is written);
- a read-only file, or one with other hard links (a rename would split them), is refused.

:func:`workspace_lock` keeps two writers of one workspace (two ``fix --apply``) from
interleaving. Knows nothing of torch or LSP.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import io
import os
import signal
import stat
import sys
import tempfile
import threading
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..texts.source import content_hash

# A source file past this is no file a rewrite is for.
_MAX_BYTES = 64 << 20


class WriteError(Exception):
    """A file was not written; the message says why, and that the file is as it was."""


class FileChanged(WriteError):
    """The file's bytes are no longer those the rewrite was verified for."""


@dataclass(frozen=True)
class Source:
    """A file's bytes as read once, and its text as Python decodes them."""

    path: str  # as given (a link inside the workspace stays a link)
    real: str  # what is written
    data: bytes
    text: str  # line endings as in the file
    encoding: str  # tokenize's name for it: "utf-8-sig" for a BOM
    digest: str

    def encode(self, text: str) -> bytes:
        """``text`` in this file's encoding (BOM included); WriteError where that would not
        give back every byte of the original, or cannot hold ``text``."""
        if self.text.encode(self.encoding) != self.data:
            raise WriteError(
                f"{self.path}: its {self.encoding} text does not encode back to the same bytes; "
                "not written, the file is unchanged"
            )
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise WriteError(
                f"{self.path}: the rewrite has characters {self.encoding} cannot hold ({exc}); "
                "not written, the file is unchanged"
            ) from exc


def read_source(path: str | os.PathLike[str]) -> Source:
    """``path`` read once; WriteError (with the reason) for what is no regular source file."""
    p = os.fspath(path)
    real = os.path.realpath(p)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise WriteError(f"cannot read {p}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WriteError(f"{p} is not a regular file")
        if st.st_size > _MAX_BYTES:
            raise WriteError(f"{p} is over {_MAX_BYTES >> 20} MB")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise WriteError(f"cannot read {p}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise WriteError(f"{p} is not valid Python source text: {exc}") from exc
    return Source(p, real, data, text, encoding, content_hash(data))


def _inside(real: str, root: str | os.PathLike[str]) -> bool:
    top = os.path.realpath(root)
    return os.path.commonpath([real, top]) == top


def _digest_now(real: str) -> str | None:
    try:
        with open(real, "rb") as fh:
            return content_hash(fh.read())
    except OSError:
        return None


def _say(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EFBIG:
        return "the file-size limit was reached"
    return exc.strerror or str(exc)


def replace_file(
    source: Source,
    text: str,
    root: str | os.PathLike[str],
    *,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Writes ``text`` over ``source``'s file, atomically, only if the file still holds the
    bytes ``source`` read; WriteError (FileChanged for a changed file) otherwise, the file
    then as it was. ``before_rename`` is for tests (a kill or an edit at the last moment)."""
    real = os.path.realpath(source.path)
    if real != source.real or not _inside(real, root):
        raise WriteError(
            f"{source.path} resolves to {real}, outside the workspace {root}: not written"
        )
    try:
        st = os.stat(real)
    except OSError as exc:
        raise WriteError(f"cannot write {source.path}: {_say(exc)}") from exc
    # Root may write anything: a file with no write bit is read-only by its owner's choice.
    if not os.access(real, os.W_OK) or not st.st_mode & 0o222:
        raise WriteError(f"{source.path} is read-only: not written, the file is unchanged")
    if st.st_nlink > 1:
        raise WriteError(
            f"{source.path} has {st.st_nlink} hard links: a rewrite would leave the others "
            "behind; not written, the file is unchanged"
        )
    data = source.encode(text)
    if _digest_now(real) != source.digest:
        raise FileChanged(_changed(source.path))
    folder = os.path.dirname(real)
    _remove_stale(folder, os.path.basename(real))
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(real)}.", suffix=TEMP_SUFFIX, dir=folder
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, st.st_uid, st.st_gid)
                if (os.fstat(fd).st_uid, os.fstat(fd).st_gid) != (st.st_uid, st.st_gid):
                    raise WriteError(
                        f"{source.path} belongs to another user, which a rewrite cannot keep: "
                        "not written, the file is unchanged"
                    )
            _copy_xattrs(real, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_rename is not None:
            before_rename()
        # The last look: what the editor saved a moment ago must not be overwritten.
        if _digest_now(real) != source.digest:
            raise FileChanged(_changed(source.path))
        _swap_in(tmp, real, source)
    except BaseException as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteError(
                f"could not write {source.path}: {_say(exc)}; the file is unchanged"
            ) from exc
        raise
    _fsync_folder(folder)


def _copy_xattrs(real: str, fd: int) -> None:
    """The file's extended attributes (ACLs among them) onto the new file, where the system
    has them and lets us set each (a security label may not be ours to set)."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(real)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(fd, name, os.getxattr(real, name))


# Our temporary files: ``.<name>.<random>.dynamo-lens.tmp`` beside the file. One a killed run
# left behind is removed by the next write of that file.
TEMP_SUFFIX = ".dynamo-lens.tmp"


def _remove_stale(folder: str, name: str) -> None:
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(f".{name}.") and entry.name.endswith(TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


_RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(a: str, b: str) -> bool:
    """Swaps the files at ``a`` and ``b`` in one step (Linux's ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _swap_in(tmp: str, real: str, source: Source) -> None:
    """``tmp`` becomes ``real``. Where the system can, the two swap in one step and what was
    swapped out is read: had it changed since the last look (an editor saved in that instant),
    they swap back and nothing is lost. Elsewhere a rename, after the last look."""
    if not _exchange(tmp, real):
        os.replace(tmp, real)
        return
    # ``tmp`` now holds what ``real`` held an instant ago.
    if _digest_now(tmp) != source.digest:
        _exchange(tmp, real)
        raise FileChanged(_changed(source.path))
    os.unlink(tmp)


def _changed(path: str) -> str:
    return f"{path} changed after it was read: not written, your edit is kept"


def _fsync_folder(folder: str) -> None:
    # The rename itself must survive a crash; a folder that cannot be opened (rare) is not
    # worth failing a write that already happened.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Within it, SIGINT and SIGTERM wait until it ends: a file's rename and its being
    recorded as changed happen together, so an interrupted run names every file it changed.
    (Only the main thread can hold signals back; elsewhere this does nothing.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in kept:
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
        if pending:
            signal.raise_signal(pending[0])


@contextlib.contextmanager
def workspace_lock(
    root: str | os.PathLike[str], on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """An advisory lock on the workspace's folder (``flock``: nothing is created in it), held
    while open: a second writer waits for the first, calling ``on_wait`` once if it must."""
    fd = os.open(Path(root), os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
