"""notebookDocument/didOpen, didChange, didSave, didClose: a notebook's cells, as the editor
holds them, into the service (server/notebooks.py). pygls keeps the notebook and its cells'
texts in its workspace; this only reads them out."""

from __future__ import annotations

from lsprotocol import types

from .app import DynamoLensServer, server
from .convert import uri_to_path


def _edited(ls: DynamoLensServer, uri: str) -> None:
    path = uri_to_path(uri)
    if path is None:
        ls.log_line(f"not analysed (not a notebook on disk): {uri}")
    elif ls.service is not None:  # else the service, when it starts, takes every open one
        ls.service.notebooks.edited(path, ls.notebook_cells(uri))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def did_open(ls: DynamoLensServer, params: types.DidOpenNotebookDocumentParams) -> None:
    _edited(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def did_change(ls: DynamoLensServer, params: types.DidChangeNotebookDocumentParams) -> None:
    _edited(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def did_save(ls: DynamoLensServer, params: types.DidSaveNotebookDocumentParams) -> None:
    path = uri_to_path(params.notebook_document.uri)
    if ls.service is not None and path is not None:
        ls.service.notebooks.saved(path)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def did_close(ls: DynamoLensServer, params: types.DidCloseNotebookDocumentParams) -> None:
    path = uri_to_path(params.notebook_document.uri)
    if ls.service is not None and path is not None:
        ls.service.notebooks.closed(path)
    # Its cells' markers go with it: a closed notebook's cells are in no Problems panel.
    for cell in params.cell_text_documents:
        ls.clear_diagnostics(cell.uri)
