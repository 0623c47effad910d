"""The parent's side of analysis: files checked here, user code run in worker processes.

Knows nothing of LSP and never imports torch. ``analysis`` runs one file, ``pool`` owns the
worker processes, ``protocol`` is the wire format, ``locate``/``errors`` place findings on
source ranges (also used inside the worker).
"""
