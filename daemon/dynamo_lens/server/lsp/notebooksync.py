"""notebookDocument/didOpen, didChange, didSave, didClose: a notebook's cells, as the editor
holds them, into the service (server/notebooks.py). pygls keeps the notebook and its cells'
texts in its workspace; this only reads them out."""

from __future__ import annotations

from lsprotocol import types

from .app import DynamoLensServer
from .convert import uri_to_path


def _edited(ls: DynamoLensServer, uri: str) -> None:
    path = uri_to_path(uri)
    if path is None:
        ls.log_line(f"not analysed (not a notebook on disk): {uri}")
    elif ls.service is not None:  # else the service, when it starts, takes every open one
        ls.service.notebooks.edited(path, ls.notebook_cells(uri))


def did_open(ls: DynamoLensServer, params: types.DidOpenNotebookDocumentParams) -> None:
    _edited(ls, params.notebook_document.uri)


def did_change(ls: DynamoLensServer, params: types.DidChangeNotebookDocumentParams) -> None:
    _edited(ls, params.notebook_document.uri)


def did_save(ls: DynamoLensServer, params: types.DidSaveNotebookDocumentParams) -> None:
    path = uri_to_path(params.notebook_document.uri)
    if ls.service is not None and path is not None:
        ls.service.notebooks.saved(path)


def did_close(ls: DynamoLensServer, params: types.DidCloseNotebookDocumentParams) -> None:
    path = uri_to_path(params.notebook_document.uri)
    if ls.service is not None and path is not None:
        ls.service.notebooks.closed(path)
    # Its cells' markers go with it: a closed notebook's cells are in no Problems panel.
    for cell in params.cell_text_documents:
        ls.clear_diagnostics(cell.uri)


def register(ls: DynamoLensServer) -> None:
    ls.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(did_save)
    ls.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(did_close)
