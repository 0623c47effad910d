"""The rules' checks, by what they listen to (``events.py``). Importing this package registers
every one; each module holds the checks for one kind of event."""

from . import builtin_calls, imported_calls, local_calls, method_calls, torch_calls, values

__all__ = [
    "builtin_calls",
    "imported_calls",
    "local_calls",
    "method_calls",
    "torch_calls",
    "values",
]
