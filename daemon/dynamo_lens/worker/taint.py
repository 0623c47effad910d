"""Did user code change this process in a way that outlives its job?

One file that patches ``builtins.len`` gave the next, unrelated file false errors (and the
cache kept them). After every job the worker compares what user code could have changed with a
snapshot taken before any ran; a job that changed any of it is reported tainted, its result is
not cached, and the worker is replaced.

The import finders that libraries add as they are imported (``_IMPORT_TIME_FINDERS``) are not a
change of this kind: the library stays imported, and a fresh worker that imports it gets the
same finder. Transformers adds one (its legacy module aliases); counting it replaced the worker
after every job of every file that imports transformers, and cached none of their results. Only
those named: a library can also add a finder when user code asks it to (an alias of one module
for another, a blocker of other bindings), which a fresh worker would not have.
"""

from __future__ import annotations

import builtins
import os
import signal
import site
import sys
import sysconfig
import threading
from typing import Any

try:
    import resource
except ImportError:  # pragma: no cover - not on Linux/macOS
    resource = None  # type: ignore[assignment]

_SYS_ATTRS = (
    "stdout",
    "stderr",
    "stdin",
    "excepthook",
    "displayhook",
    "meta_path",
    "path_hooks",
    "breakpointhook",
)
_SIGNALS = tuple(
    s
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
    if isinstance(s, signal.Signals)
)
_LIMITS = ("RLIMIT_AS", "RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_CPU", "RLIMIT_DATA")


def _ids(namespace: dict[str, Any]) -> dict[str, int]:
    return {k: id(v) for k, v in namespace.items()}


# (module, class) of finders a library adds to ``sys.meta_path`` whenever it is imported, and
# that only answer for that library's own module names.
_IMPORT_TIME_FINDERS = frozenset(
    {
        ("transformers.utils.import_utils", "_LegacyModuleAliasFinder"),  # transformers 5
        ("six", "_SixMetaPathImporter"),  # six.moves
    }
)


def _install_dirs() -> tuple[str, ...]:
    """Where installed libraries and the standard library live, for this interpreter."""
    paths = sysconfig.get_paths()
    dirs = [paths.get(k, "") for k in ("purelib", "platlib", "stdlib", "platstdlib")]
    try:
        dirs += [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - a virtualenv's old site.py
        pass
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


class Baseline:
    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.builtins = _ids(vars(builtins))
        self.torch_attrs = _ids(vars(torch))
        self.tensor_attrs = _ids(dict(vars(torch.Tensor)))
        self.functional = _ids(vars(torch.nn.functional))
        self.sys = {a: id(getattr(sys, a, None)) for a in _SYS_ATTRS}
        # Identities, not len(): user code may have replaced len itself.
        self.meta_path = [id(f) for f in sys.meta_path]
        self.installed = _install_dirs()
        self.trace = (sys.gettrace(), sys.getprofile())
        self.recursion = sys.getrecursionlimit()
        self.signals = {s: signal.getsignal(s) for s in _SIGNALS}
        self.limits = self._limits()
        self.cwd = os.getcwd()
        self.threads = {t.ident for t in threading.enumerate()}
        self.grad = torch.is_grad_enabled()
        self.dtype = torch.get_default_dtype()

    def _added_by_library(self, finder: object) -> bool:
        """Whether ``finder`` is one a library adds as it is imported: a class named in
        ``_IMPORT_TIME_FINDERS``, the very one its module defines, from an installed file."""
        cls = type(finder)
        name, qualname = cls.__module__, cls.__qualname__
        module = sys.modules.get(name)
        if (name, qualname) not in _IMPORT_TIME_FINDERS or getattr(
            module, qualname, None
        ) is not cls:
            return False
        path = getattr(module, "__file__", None)
        return isinstance(path, str) and os.path.realpath(path).startswith(self.installed)

    def _meta_path_changed(self) -> bool:
        """Whether user code added, removed or reordered an import finder; a library's own
        finder, added as it was imported, joins the baseline instead."""
        now = [id(f) for f in sys.meta_path]
        kept = [i for i in now if i in self.meta_path]
        added = [f for f in sys.meta_path if id(f) not in self.meta_path]
        if kept != self.meta_path or not all(self._added_by_library(f) for f in added):
            return True
        self.meta_path = now
        return False

    @staticmethod
    def _limits() -> dict[str, Any]:
        if resource is None:
            return {}
        return {
            n: resource.getrlimit(getattr(resource, n)) for n in _LIMITS if hasattr(resource, n)
        }

    def changes(self) -> list[str]:
        """What differs from the baseline, in words; empty when the process is as it was."""
        torch = self.torch
        out: list[str] = []
        for what, before, now in (
            ("builtins", self.builtins, _ids(vars(builtins))),
            ("torch", self.torch_attrs, _ids(vars(torch))),
            ("torch.Tensor", self.tensor_attrs, _ids(dict(vars(torch.Tensor)))),
            ("torch.nn.functional", self.functional, _ids(vars(torch.nn.functional))),
        ):
            changed = sorted(k for k in before if now.get(k) != before[k])
            # New names are normal for torch (lazy submodules); new builtins are not.
            added = sorted(set(now) - set(before)) if what == "builtins" else []
            if changed or added:
                out.append(f"{what}.{(changed + added)[0]} was replaced")
        for a, ident in self.sys.items():
            if id(getattr(sys, a, None)) != ident:
                out.append(f"sys.{a} was replaced")
        if self._meta_path_changed():
            out.append("sys.meta_path changed")
        if (sys.gettrace(), sys.getprofile()) != self.trace:
            out.append("a trace or profile function was left installed")
        # Raising it is what Dynamo itself does; lowering it breaks tracing for what follows.
        if sys.getrecursionlimit() < self.recursion:
            out.append("the recursion limit was lowered")
        for s, handler in self.signals.items():
            if signal.getsignal(s) != handler:
                out.append(f"the {s.name} handler changed")
        if self._limits() != self.limits:
            out.append("a resource limit changed")
        if os.getcwd() != self.cwd:
            out.append("the working directory changed")
        # Daemon threads are background helpers (torch's compile pool, tqdm's monitor) that
        # end with the process; a non-daemon thread left running is user work still going.
        alive = [
            t
            for t in threading.enumerate()
            if t.ident not in self.threads and t.is_alive() and not t.daemon
        ]
        if alive:
            out.append(f"{len(alive)} thread(s) left running ({alive[0].name})")
        if torch.is_grad_enabled() != self.grad:
            out.append("torch's grad mode was left changed")
        if torch.get_default_dtype() != self.dtype:
            out.append("torch's default dtype was left changed")
        return out
