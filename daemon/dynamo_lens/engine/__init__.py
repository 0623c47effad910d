"""The parent's side of analysis: files checked here, user code run in worker processes.

Knows nothing of LSP and never imports torch. ``analysis`` runs one file, ``pool`` owns the
worker processes, ``protocol`` is the wire format, ``source`` reads a file's bytes (hash,
decoding, syntax), ``declarations`` decides what zero-config guesses may run. Placing findings
on source lines (``texts.locate``, ``texts.errors``) is shared with the worker.
"""
