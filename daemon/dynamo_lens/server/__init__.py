"""The daemon (``dynamo-lens serve``): documents, scheduling, cache, file watching, and the LSP
edge in ``lsp/``. Never imports torch; runs analysis through ``dynamo_lens.engine``."""
