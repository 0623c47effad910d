"""Calls to imported functions other than torch's, by their kind (``calls.stdlib_kind``):
clocks, RNGs, loggers, file and process I/O, debuggers, frame inspection, deep copies, math on
tensors, NumPy's RNG, and libraries Dynamo cannot trace."""

from __future__ import annotations

from ..events import STDLIB, Check, check
from ..model import K
from ..returns import library_of
from ..syntax import short
from ..torch_api import IO_GB, LIBRARIES, NP_RANDOM_SIZE_POS, NP_RANDOM_TRACED


@check("wall-clock", STDLIB, "clock")
def wall_clock(c: Check) -> None:
    c.hit("call", name=c.name)


@check("datetime-now", STDLIB, "datetime-now")
def datetime_now(c: Check) -> None:
    c.hit("call", name=short(c.name))


@check("python-random", STDLIB, "random")
def python_random(c: Check) -> None:
    # random.uniform/randint/randrange with constant arguments are traced (verified).
    last = c.name.rsplit(".", 1)[-1]
    any_tensor = any(a.tensor for a in c.args) or any(v.tensor for v in c.kwargs.values())
    if last not in ("uniform", "randint", "randrange") or any_tensor:
        c.hit("call", name=c.name)


@check("warnings-call", STDLIB, "warn")
def warnings_call(c: Check) -> None:
    if "warnings.warn" not in c.flags.reorderable:
        c.hit()


@check("logging-module-call", STDLIB, "logging-call")
def logging_call(c: Check) -> None:
    if c.name not in c.flags.reorderable:
        c.hit("call", name=c.name)


@check("logger-call", STDLIB, "logger-method")
def logger_object_call(c: Check) -> None:
    parts = c.name.split(".")
    c.hit("logging-logger", name=f"{parts[-2]}.{parts[-1]}")


@check("debugger", STDLIB, "debugger")
def debugger_call(c: Check) -> None:
    c.hit("pdb" if c.name.startswith("pdb.") else "other", name=c.name)


@check("frame-inspection", STDLIB, "frame")
def frame_inspection(c: Check) -> None:
    c.hit("call", name=c.name)


@check("file-io", STDLIB, "io", "numpy-io", "os-io", "subprocess", "shutil")
def file_io(c: Check) -> None:
    kind = c.extra["kind"]
    if kind == "numpy-io":
        c.hit("call", name=short(c.name), gb=IO_GB[c.name])
    elif kind == "io":
        c.hit("call", name=c.name, gb=IO_GB[c.name])
    elif kind == "os-io":
        c.hit("skipped", name=c.name)
    else:
        c.hit("subprocess" if kind == "subprocess" else "other", name=c.name)


@check("deepcopy", STDLIB, "deepcopy")
def deepcopy(c: Check) -> None:
    a0 = c.args[0] if c.args else None
    if a0 is not None and (a0.tensor or a0.k == K.SEQ):
        c.hit("deepcopy")
    elif a0 is not None and a0.k in (K.MODULE, K.SELF):
        c.hit("module")


@check("tensor-to-python-scalar", STDLIB, "math")
def math_on_tensor(c: Check) -> None:
    if any(a.tensor for a in c.args) or any(v.tensor for v in c.kwargs.values()):
        c.hit("math", name=c.name)


@check("non-torch-library", STDLIB, "library")
def library_call(c: Check) -> None:
    lib = library_of(c.name)
    assert lib is not None
    c.hit("call", name=c.name, gb=LIBRARIES[lib] or "")


def _np_random(c: Check) -> str | None:
    """The numpy.random function called, None for seeding and submodules."""
    fn = c.name[len("numpy.random.") :]
    return None if fn == "seed" or "." in fn else fn


@check("numpy-random-unsupported", STDLIB, "numpy-random")
def numpy_random_unsupported(c: Check) -> None:
    fn = _np_random(c)
    if fn is not None and fn not in NP_RANDOM_TRACED:
        c.hit("call", name=fn)


@check("numpy-random-scalar", STDLIB, "numpy-random")
def numpy_random_scalar(c: Check) -> None:
    fn = _np_random(c)
    if fn is None or fn not in NP_RANDOM_TRACED or fn == "shuffle":
        return
    call = c.call
    has_size = any(k.arg == "size" for k in call.keywords)
    if not has_size and len(call.args) <= NP_RANDOM_SIZE_POS.get(fn, 0):
        c.hit("no-size", name=fn)
