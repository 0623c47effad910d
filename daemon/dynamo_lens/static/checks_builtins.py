"""Static rules on python builtins and standard-library modules: print, open, time, random, logging,
pdb, copy, numpy's random, and C-extension libraries.
"""

from __future__ import annotations

import ast

from .api import (
    FRAME_FNS,
    IO_GB,
    LIBRARIES,
    LOG_METHODS,
    LOGGERISH,
    NP_RANDOM_SIZE_POS,
    NP_RANDOM_TRACED,
    OS_IO,
    WALL_CLOCK,
)
from .model import (
    FILE,
    LOGGER,
    NDARRAY,
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    K,
    V,
    join,
)
from .state import (
    _short,
)
from .walker import WalkerCore


class BuiltinChecks(WalkerCore):
    def builtin_call(self, e: ast.Call, fn: str, args: list[V]) -> V:
        a0 = args[0] if args else UNKNOWN
        if fn == "print":
            if "print" not in self.an.flags.reorderable:
                self.hit("print-call", e)
            return SCALAR
        if fn in ("open", "input"):
            self.hit("file-io", e, "call", name=fn, gb=IO_GB[f"builtins.{fn}"])
            return FILE if fn == "open" else SCALAR
        if fn == "breakpoint":
            self.hit("debugger", e, "breakpoint")
            return SCALAR
        if fn in ("int", "float", "bool", "complex") and len(args) == 1:
            if a0.tensor:
                if not (self.an.flags.capture_scalar_outputs and fn != "bool"):
                    self.hit("tensor-to-python-scalar", e, "builtin", name=fn)
            elif a0.k == K.NDARRAY:
                self.hit("numpy-to-python", e, "builtin", name=fn)
            return SCALAR
        if fn in ("str", "repr") and len(args) == 1 and a0.tensor:
            self.hit("tensor-to-string", e, "repr" if fn == "repr" else "str", name=fn)
            return SCALAR
        if fn == "range":
            if any(a.tensor for a in args):
                self.hit("tensor-to-python-scalar", e, "range")
            return SCALAR
        if fn in ("len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "str"):
            return SCALAR
        if fn in ("list", "tuple", "sorted", "reversed"):
            if a0.tensor or a0.k == K.SEQ:
                return SEQ
            return a0 if a0.k in (K.TUPLE, K.MODULE) else UNKNOWN
        if fn in ("any", "all") and len(args) == 1 and a0.k == K.SEQ and e.args:
            if isinstance(e.args[0], (ast.GeneratorExp, ast.ListComp)):
                # any(t.max() > 10 for t in ts): bool() of each tensor element.
                self.hit("data-dependent-branch", e, "any-all", name=fn)
            return SCALAR
        if fn in ("sum", "max", "min", "abs", "round"):
            if fn in ("sum", "abs") and (a0.tensor or a0.k == K.SEQ):
                return TENSOR
            if fn in ("max", "min") and len(args) > 1:
                out: V | None = None
                for a in args:
                    out = join(out, a)
                return out or UNKNOWN
            return SCALAR if a0.k == K.SCALAR else UNKNOWN
        if fn == "super":
            return V(K.SELF, frozenset({"<super>"}))
        if fn == "getattr" and len(args) >= 2 and args[0].k == K.SELF:
            return UNKNOWN
        return UNKNOWN

    def module_call(self, e: ast.Call, q: str, args: list[V], kwargs: dict[str, V]) -> V:
        """A call to a function reached through an import: torch.*, numpy.*, time.*, ..."""
        root, _, rest = q.partition(".")
        last = q.rsplit(".", 1)[-1]
        any_tensor = any(a.tensor for a in args) or any(v.tensor for v in kwargs.values())
        if root == "torch":
            return self.torch_call(e, q, args, kwargs)
        if root == "numpy":
            if rest.startswith("random."):
                self.numpy_random(e, rest[len("random.") :], q)
                return NDARRAY if any_tensor else UNKNOWN
            if q in IO_GB:
                self.hit("file-io", e, "call", name=_short(q), gb=IO_GB[q])
                return UNKNOWN
            if any_tensor or any(a.k == K.NDARRAY for a in args):
                return NDARRAY
            return SCALAR if all(a.k == K.SCALAR for a in args) else UNKNOWN
        if root == "time" and last in WALL_CLOCK:
            self.hit("wall-clock", e, "call", name=q)
            return SCALAR
        if root == "datetime" and last in ("now", "utcnow", "today", "fromtimestamp"):
            self.hit("datetime-now", e, "call", name=_short(q))
            return UNKNOWN
        if root == "random":
            # random.uniform/randint/randrange with constant arguments are traced (verified).
            if last not in ("uniform", "randint", "randrange") or any_tensor:
                self.hit("python-random", e, "call", name=q)
            return SCALAR
        if q == "warnings.warn":
            if "warnings.warn" not in self.an.flags.reorderable:
                self.hit("warnings-call", e)
            return SCALAR
        if root == "logging":
            if last in LOG_METHODS and rest.count(".") == 0:
                if q not in self.an.flags.reorderable:
                    self.hit("logging-module-call", e, "call", name=q)
                return SCALAR
            if last == "getLogger":
                return LOGGER
        if q in ("pdb.set_trace", "ipdb.set_trace", "pudb.set_trace", "pdb.post_mortem"):
            self.hit("debugger", e, "pdb" if root == "pdb" else "other", name=q)
            return SCALAR
        if q in FRAME_FNS:
            self.hit("frame-inspection", e, "call", name=q)
            return UNKNOWN
        if q in IO_GB:
            self.hit("file-io", e, "call", name=q, gb=IO_GB[q])
            return UNKNOWN
        if root == "os" and last in OS_IO:
            self.hit("file-io", e, "skipped", name=q)
            return UNKNOWN
        if root in ("subprocess", "shutil"):
            self.hit("file-io", e, "subprocess" if root == "subprocess" else "other", name=q)
            return UNKNOWN
        if q == "copy.deepcopy":
            a0 = args[0] if args else UNKNOWN
            if a0.tensor or a0.k == K.SEQ:
                self.hit("deepcopy", e, "deepcopy")
            elif a0.k in (K.MODULE, K.SELF):
                self.hit("deepcopy", e, "module")
            return a0
        if q == "math" or root == "math":
            if any_tensor:
                self.hit("tensor-to-python-scalar", e, "math", name=q)
            return SCALAR
        for lib, gb in LIBRARIES.items():
            if q == lib or q.startswith(lib + "."):
                self.hit("non-torch-library", e, "call", name=q, gb=gb or "")
                return UNKNOWN
        if root == "functools" and last == "partial":
            return UNKNOWN
        if root == "torch_utils":
            return UNKNOWN
        # A logger object imported from elsewhere: recognisable by name only.
        parts = q.split(".")
        if len(parts) >= 2 and parts[-2] in LOGGERISH and last in LOG_METHODS:
            self.hit("logger-call", e, "logging-logger", name=f"{parts[-2]}.{last}")
            return SCALAR
        return UNKNOWN

    def numpy_random(self, e: ast.Call, fn: str, q: str) -> None:
        if fn == "seed" or "." in fn:
            return
        if fn not in NP_RANDOM_TRACED:
            self.hit("numpy-random-unsupported", e, "call", name=fn)
            return
        if fn == "shuffle":
            return
        has_size = any(k.arg == "size" for k in e.keywords)
        pos_limit = NP_RANDOM_SIZE_POS.get(fn, 0)
        if not has_size and len(e.args) <= pos_limit:
            self.hit("numpy-random-scalar", e, "no-size", name=fn)
