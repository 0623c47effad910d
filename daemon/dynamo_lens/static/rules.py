"""The catalogue of static rules: what each likely graph break is called, why, and its GB id.

Every GB id here was checked against torch 2.13 by running ``torch._dynamo.explain`` on a small
snippet (see ``bench/static/RESULTS.md``); torch names the id in its own message
("For more details ... gb/gb0124.html"). Where the reason torch gives depends on the call
(e.g. a scipy routine that Dynamo inlines and trips over somewhere inside), ``gb_id`` is ``None``
rather than a guess. Where one rule covers several forms of a construct, each form is a
variant with its own message detail and GB id. This module is data only; the detection lives
in ``analyzer.py`` and the ``checks`` package (one module per kind of event, ``events.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

# A variant's GB id when it is the rule's own.
SAME = "same"


@dataclass(frozen=True)
class Variant:
    what: str  # the message detail: a str.format template over the hit's fields ({name})
    gb_id: str | None  # torch's id for this form; None: torch names none; SAME: the rule's


@dataclass(frozen=True)
class Rule:
    id: str
    message: str  # short, already labelled as likely
    explanation: str
    hint: str
    gb_id: str | None = None
    # "high": torch breaks on this construct whenever it is traced; "medium": it depends on
    # values or types the source does not show. High maps to INFORMATION, medium to HINT.
    confidence: str = "high"
    variants: Mapping[str, Variant] = field(default_factory=dict)


def _r(id: str, what: str, explanation: str, hint: str, gb: str | None, conf: str = "high") -> Rule:
    return Rule(id, f"Likely graph break: {what}", explanation, hint, gb, conf)


_RULES = [
    _r(
        "print-call",
        "print() call",
        "Dynamo cannot trace the builtin print; it compiles the code before it, runs print "
        "in Python and starts a new graph after it.",
        "Remove the print from the compiled code, guard it with "
        "`if not torch.compiler.is_compiling():`, or add print to "
        "`torch._dynamo.config.reorderable_logging_functions`.",
        "GB0059",
    ),
    _r(
        "logger-call",
        "logging.Logger method call",
        "logging.Logger methods are not traced by Dynamo outside export.",
        "Add the method to `torch._dynamo.config.ignore_logger_methods`, or log outside "
        "the compiled region.",
        "GB0291",
    ),
    _r(
        "logging-module-call",
        "logging module call",
        "The module-level logging functions (logging.info, logging.warning, ...) are not "
        "traceable; Dynamo falls back to Python for the call.",
        "Log outside the compiled region, or guard it with "
        "`if not torch.compiler.is_compiling():`.",
        "GB4841",
    ),
    _r(
        "warnings-call",
        "warnings.warn() call",
        "warnings.warn is marked as skipped by Dynamo, so calling it ends the graph.",
        "Warn outside the compiled region, or guard it with "
        "`if not torch.compiler.is_compiling():`.",
        "GB0007",
    ),
    _r(
        "tensor-item",
        "Tensor.item() call",
        "`.item()` copies a tensor value into a Python number; with the default "
        "capture_scalar_outputs=False Dynamo cannot keep that in the graph.",
        "Keep the value as a 0-d tensor, or set "
        "`torch._dynamo.config.capture_scalar_outputs = True`.",
        "GB0124",
    ),
    _r(
        "tensor-tolist",
        "Tensor.tolist() call",
        "`.tolist()` turns tensor data into Python values, which Dynamo cannot trace.",
        "Keep working with the tensor, or move the conversion out of the compiled code.",
        "GB0109",
    ),
    _r(
        "tensor-to-python-scalar",
        "tensor converted to a Python value",
        "int()/float()/bool() (and math.* or range()) on a tensor read its data on the host; "
        "the result depends on tensor values Dynamo does not know at trace time.",
        "Use tensor operations instead (e.g. torch.floor, torch.where), or set "
        "`torch._dynamo.config.capture_scalar_outputs = True` for int()/float().",
        "GB0124",
    ),
    _r(
        "numpy-to-python",
        "NumPy value from a tensor used as a Python value",
        "Dynamo traces NumPy on tensors, but turning the result into Python numbers or lists "
        "(float(), .item(), .tolist()) depends on the data.",
        "Stay in torch (or NumPy arrays) until after the compiled region.",
        "GB0033",
    ),
    _r(
        "data-dependent-branch",
        "data-dependent branch on a tensor value",
        "Python control flow (if/while/and/or/conditional expression) on a tensor needs its "
        "value, which Dynamo does not know when it traces.",
        "Use `torch.where`, masking, or `torch.cond` to express the branch on tensors.",
        "GB0170",
    ),
    _r(
        "data-dependent-bool-op",
        "tensor comparison returning a Python bool",
        "torch.equal, torch.allclose, Tensor.is_nonzero and `not tensor` return a Python bool "
        "computed from tensor data.",
        "Compare with tensor ops (e.g. `(a == b).all()`) and keep the result as a tensor.",
        "GB0033",
    ),
    _r(
        "dynamic-shape-op",
        "operator with a data-dependent output shape",
        "The output shape depends on tensor values (nonzero, unique, masked_select, "
        "boolean-mask indexing, ...); Dynamo cannot trace it with the default "
        "capture_dynamic_output_shape_ops=False.",
        "Use a fixed-shape alternative (torch.where, masked_fill, nonzero_static), or set "
        "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`.",
        "GB0036",
    ),
    _r(
        "one-hot-no-num-classes",
        "F.one_hot() without num_classes",
        "Without num_classes the output width is the largest value in the input.",
        "Pass `num_classes=` explicitly.",
        "GB0246",
    ),
    _r(
        "explicit-graph-break",
        "torch._dynamo.graph_break() call",
        "The code asks Dynamo to end the graph here.",
        "Remove the call if the break is not wanted.",
        "GB0025",
    ),
    _r(
        "compiler-disabled-call",
        "call to a torch.compiler.disable()d function",
        "The called function is excluded from compilation, so the graph ends around the call.",
        "Remove the disable decorator if the function is traceable.",
        "GB0098",
    ),
    _r(
        "wall-clock",
        "wall-clock time call",
        "Time functions are skipped by Dynamo and their result changes on every call.",
        "Measure time outside the compiled function.",
        "GB0007",
    ),
    _r(
        "datetime-now",
        "datetime.now() call",
        "Dynamo cannot trace datetime's clock methods.",
        "Read the clock outside the compiled function.",
        "GB0156",
    ),
    _r(
        "python-random",
        "Python random-number call",
        "The `random` module and RNG seeding functions are skipped by Dynamo.",
        "Use torch's RNG (torch.rand, torch.randint, torch.randperm) inside compiled code, and "
        "seed outside it.",
        "GB0007",
    ),
    _r(
        "numpy-random-unsupported",
        "unsupported numpy.random call",
        "Dynamo traces only a few numpy.random functions (rand, randn, normal, uniform, ...); "
        "others are not supported.",
        "Use torch's RNG (torch.randperm, torch.bernoulli, torch.distributions) instead.",
        "GB0294",
    ),
    _r(
        "numpy-random-scalar",
        "numpy.random call returning a Python scalar",
        "Without a size argument this returns a Python number, which Dynamo cannot keep in "
        "the graph.",
        "Pass a size, or use torch's RNG (torch.rand(()), ...).",
        "GB0033",
    ),
    _r(
        "file-io",
        "file or OS I/O call",
        "open(), torch.save/load, pickle, os and sys.stdout calls are not traceable.",
        "Do I/O outside the compiled function.",
        "GB0059",
    ),
    _r(
        "debugger",
        "debugger call",
        "breakpoint() and pdb are not traceable; Dynamo runs them in Python.",
        "Remove the debugger call, or debug with `torch.compile(backend='eager')` / "
        "`torch._dynamo.config.suppress_errors`.",
        "GB0059",
    ),
    _r(
        "non-torch-library",
        "call into a non-PyTorch numerics or C extension library",
        "Functions from libraries such as SciPy, OpenCV or scikit-learn are C extensions or "
        "call into them; Dynamo cannot trace through them.",
        "Use the torch equivalent, or move the call out of the compiled code (or wrap it as a "
        "custom op with torch.library).",
        None,
        "medium",
    ),
    _r(
        "deepcopy",
        "copy.deepcopy() call",
        "Dynamo does not trace copy.deepcopy of tensors or modules.",
        "Copy outside the compiled function, or use tensor.clone().",
        "GB4198",
    ),
    _r(
        "tensor-to-string",
        "tensor converted to a string",
        "str()/repr()/%-formatting of a tensor prints its data, which Dynamo cannot trace.",
        "Format shapes or dtypes instead (f-strings of tensors are traced), or move logging "
        "outside the compiled code.",
        "GB0059",
    ),
    _r(
        "tensor-backward",
        "Tensor.backward() inside the compiled function",
        "Dynamo does not trace .backward(); compile the forward and call backward outside.",
        "Call `loss.backward()` outside the compiled function (compiled autograd is separate).",
        "GB0123",
    ),
    _r(
        "autograd-grad",
        "torch.autograd.grad() inside the compiled function",
        "With the default trace_autograd_ops=False Dynamo does not trace torch.autograd.grad.",
        "Call autograd.grad outside the compiled function.",
        "GB9186",
    ),
    _r(
        "tensor-meta-mutation",
        "unsupported tensor mutation",
        "Setting .requires_grad or .data, requires_grad_() on an intermediate, and resize_() "
        "are not traceable.",
        "Do this setup outside the compiled function.",
        None,
    ),
    _r(
        "module-construction",
        "nn.Module or nn.Parameter constructed inside compiled code",
        "Creating parameters (nn.Parameter, or any layer such as nn.Linear) while tracing is not "
        "supported.",
        "Create layers and parameters in __init__ and reuse them in forward.",
        "GB0264",
    ),
    _r(
        "rnn",
        "recurrent layer or packed sequence",
        "Dynamo does not trace nn.LSTM/GRU/RNN modules (allow_rnn=False) and skips the "
        "pack_padded_sequence helpers.",
        "Leave the recurrent part outside the compiled region, or try "
        "`torch._dynamo.config.allow_rnn = True`.",
        "GB0014",
    ),
    _r(
        "class-definition",
        "class defined inside compiled code",
        "Dynamo cannot trace a class statement (__build_class__).",
        "Define the class at module level.",
        "GB8977",
    ),
    _r(
        "frame-inspection",
        "stack-frame inspection",
        "inspect.currentframe/stack and sys._getframe are skipped by Dynamo.",
        "Move the introspection out of the compiled code.",
        "GB0007",
    ),
]

# The forms of a construct a rule reports separately: (message detail, GB id).
_VARIANTS: dict[str, dict[str, tuple[str, str | None]]] = {
    "tensor-to-python-scalar": {
        "range": ("range() over a tensor", "GB0059"),
        "index-0d": ("indexing with a 0-d tensor (argmax())", "GB0033"),
        "seq-index": ("Python sequence indexed by a tensor", SAME),
        "builtin": ("{name}() of a tensor", SAME),
        "math": ("{name}() on a tensor", "GB0033"),
        "in-test": ("`in` test on a tensor", SAME),
    },
    "dynamic-shape-op": {
        "bool-mask": ("boolean-mask indexing", "GB0036"),
        "tensor-method": ("Tensor.{name}() has a data-dependent output shape", SAME),
        "torch-fn": ("{name}() has a data-dependent output shape", SAME),
        "where": ("torch.where(condition) has a data-dependent shape", SAME),
        "repeat-interleave": ("repeat_interleave() with tensor repeats", SAME),
    },
    "file-io": {
        "call": ("{name}() call", SAME),  # the id comes from api.IO_GB
        "skipped": ("{name}() call", "GB0007"),
        "subprocess": ("{name}() call", "GB0007"),
        "other": ("{name}() call", None),
    },
    "debugger": {
        "breakpoint": ("breakpoint() call", "GB0059"),
        "pdb": ("{name}() call", "GB0007"),
        "other": ("{name}() call", None),
    },
    "numpy-to-python": {
        "builtin": ("{name}() of a NumPy value computed from a tensor", SAME),
        "tolist": ("ndarray.{name}() of a NumPy value computed from a tensor", "GB0109"),
        "method": ("ndarray.{name}() of a NumPy value computed from a tensor", "GB0033"),
    },
    "tensor-to-string": {
        "repr": ("{name}() of a tensor", "GB0569"),
        "str": ("{name}() of a tensor", SAME),
        "percent-format": ("%-formatting a tensor", SAME),
    },
    "data-dependent-branch": {"any-all": ("{name}() over tensor conditions", SAME)},
    "data-dependent-bool-op": {
        "tensor-method": ("Tensor.{name}() returns a Python bool", SAME),
        "torch-fn": ("{name}() returns a Python bool", SAME),
        "not": ("`not` applied to a tensor", SAME),
    },
    "wall-clock": {"call": ("{name}() call", SAME)},
    "datetime-now": {"call": ("{name}() call", SAME)},
    "python-random": {"call": ("{name}() call", SAME)},
    "logging-module-call": {"call": ("{name}() call", SAME)},
    "frame-inspection": {"call": ("{name}() call", SAME)},
    "compiler-disabled-call": {"call": ("call to {name}(), which is compiler-disabled", SAME)},
    "numpy-random-unsupported": {"call": ("np.random.{name}() call", SAME)},
    "numpy-random-scalar": {"no-size": ("np.random.{name}() without a size", SAME)},
    "deepcopy": {
        "deepcopy": ("", "GB4198"),
        "module": ("copy.deepcopy() of a module", "GB0264"),
    },
    "non-torch-library": {"call": ("{name}() call", SAME)},  # the id comes from api.LIBRARIES
    "logger-call": {
        "logger": ("logger.{name}() call", SAME),
        "logging-logger": ("{name}() call", None),
    },
    "tensor-tolist": {"int": ("", "GB0033"), "float": ("", "GB0109")},
    "tensor-meta-mutation": {
        "resize": ("Tensor.{name}() call", "GB0126"),
        "set": ("Tensor.{name}() call", "GB0127"),
        "requires-grad-method": ("Tensor.requires_grad_() call", "GB8985"),
        "requires-grad-attr": ("setting Tensor.requires_grad", "GB0206"),
        "data-attr": ("assigning Tensor.data", "GB0056"),
    },
    "rnn": {
        "module": ("nn.{name} module call", SAME),
        "functional": ("{name}() call", "GB0007"),
    },
    "module-construction": {
        "class": ("{name}(...) constructed inside compiled code", SAME),
        "nn-created": ("nn.{name}(...) created inside compiled code", SAME),
        "nn-constructed": ("nn.{name}(...) constructed inside compiled code", SAME),
    },
    "class-definition": {"class": ("class {name} defined inside compiled code", SAME)},
}

RULES: dict[str, Rule] = {
    r.id: replace(
        r,
        variants={
            k: Variant(what, r.gb_id if gb == SAME else gb)
            for k, (what, gb) in _VARIANTS.get(r.id, {}).items()
        },
    )
    for r in _RULES
}
