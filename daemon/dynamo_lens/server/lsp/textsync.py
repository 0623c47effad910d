"""didOpen, didChange, didSave, didClose: the editor's buffers into the service.

Only ``file:`` documents reach the service: an untitled buffer or a notebook cell has no file
that a worker could import.
"""

from __future__ import annotations

from lsprotocol import types

from .app import DynamoLensServer
from .convert import uri_to_path


def did_open(ls: DynamoLensServer, params: types.DidOpenTextDocumentParams) -> None:
    d = params.text_document
    path = uri_to_path(d.uri)
    if d.language_id not in ("python", "") or ls.service is None:
        return
    if path is None:
        # Untitled buffers have no file a worker could import, and notebook cells are not
        # analysed yet: neither runs anything.
        ls.log_line(f"not analysed (not a file on disk): {d.uri}")
        return
    ls.service.open(path, d.text, d.version)


def _buffer(ls: DynamoLensServer, uri: str) -> tuple[str, str, int | None] | None:
    """(path, editor text, version) of a file document the service should hear about. A
    notification about a document the client never opened is ignored: it is not an editor
    buffer (pygls would read the file from disk, and a save could name any file)."""
    path = uri_to_path(uri)
    if ls.service is None or path is None or not ls.is_open(uri):
        return None
    return (path, *ls.doc_text(uri))


def did_change(ls: DynamoLensServer, params: types.DidChangeTextDocumentParams) -> None:
    buf = _buffer(ls, params.text_document.uri)
    if buf is not None and ls.service is not None:
        ls.service.change(*buf)


def did_save(ls: DynamoLensServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.resync(params.text_document.uri)
    buf = _buffer(ls, params.text_document.uri)
    if buf is not None and ls.service is not None:
        ls.service.save(*buf)


def did_close(ls: DynamoLensServer, params: types.DidCloseTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if ls.service is not None and path is not None:
        ls.service.close_doc(path)


def register(ls: DynamoLensServer) -> None:
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(
        types.TEXT_DOCUMENT_DID_SAVE, types.TextDocumentSaveRegistrationOptions(include_text=False)
    )(did_save)
    ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
