"""Check every GB id the static rules attach against what real torch reports on that line.

    .venv/bin/python bench/static/verify_gb_ids.py

One tiny module per rule variant is written to a temporary folder; each gets its static hints
and is then run under ``torch._dynamo.explain`` by ``groundtruth.py``. A case passes when it
has exactly one hint, on the marked line, whose GB id is among the ids torch reported there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

from dynamo_lens.static import analyze_path  # noqa: E402

HEADER = """\
import copy, datetime, json, logging, math, os, pdb, random, sys, time, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
logger = logging.getLogger("verify")
"""

# name -> (forward body using x, then returning; `# <-` marks the line with the break).
# `grad` cases get an input that requires grad.
CASES: dict[str, str] = {
    "print": "x = x * 2\nprint(x.shape)  # <-\nreturn x + 1",
    "logger": "x = x * 2\nlogger.info('hi')  # <-\nreturn x + 1",
    "logging_module": "x = x * 2\nlogging.warning('hi')  # <-\nreturn x + 1",
    "warnings": "x = x * 2\nwarnings.warn('hi')  # <-\nreturn x + 1",
    "item": "x = x * 2\ns = x.sum().item()  # <-\nreturn x + s",
    "tolist_float": "x = x * 2\nv = x.tolist()  # <-\nreturn x + len(v)",
    "tolist_int": "x = x * 2\nv = x.argmax(-1).tolist()  # <-\nreturn x + len(v)",
    "int_of_tensor": "x = x * 2\nn = int(x.sum())  # <-\nreturn x + n",
    "math_of_tensor": "x = x * 2\nn = math.floor(x.sum())  # <-\nreturn x + n",
    "in_tensor": "x = x * 2\nb = 3 in x.long()  # <-\nreturn x + 1",
    "range_tensor": "x = x * 2\nfor i in range(x.sum().long()):  # <-\n    x = x + 1\nreturn x",
    "list_index_tensor": "x = x * 2\nt = [1.0, 2.0, 3.0]\nreturn x + t[x.argmax() % 3]  # <-",
    "ndarray_tolist": "x = x * 2\nv = x.numpy().tolist()  # <-\nreturn x + len(v)",
    "ndarray_float": "x = x * 2\nm = float(np.mean(x.numpy()))  # <-\nreturn x + m",
    "if_tensor": "x = x * 2\nif x.sum() > 0:  # <-\n    x = x + 1\nreturn x * 3",
    "while_tensor": "x = x * 2\nwhile x.sum() > 0:  # <-\n    x = x - 10\nreturn x * 3",
    "ifexp_tensor": "x = x * 2\ny = x + 1 if x.sum() > 0 else x - 1  # <-\nreturn y * 3",
    "assert_fmsg": "x = x * 2\nassert x.sum() > -1e9, f'bad {x.shape}'  # <-\nreturn x + 1",
    "any_genexpr": "x = x * 2\nif any(r.sum() > 0 for r in x):  # <-\n    x = x + 1\nreturn x * 3",
    "torch_equal": "x = x * 2\nif torch.equal(x, x):  # <-\n    x = x + 1\nreturn x * 3",
    "not_tensor": "x = x * 2\ny = not x.sum()  # <-\nreturn x + 1",
    "nonzero": "x = x * 2\nreturn torch.nonzero(x) + 1  # <-",
    "unique": "x = x * 2\nreturn x.unique() + 1  # <-",
    "masked_select": "x = x * 2\nreturn torch.masked_select(x, x > 0) + 1  # <-",
    "where_one_arg": "x = x * 2\nreturn torch.where(x > 0)[0] + 1  # <-",
    "mask_index": "x = x * 2\nm = x > 0\nreturn x[m] + 1  # <-",
    "argmax_index": "x = x * 2\ni = x.argmax()\nreturn x.flatten()[i] + 1  # <-",
    "one_hot": "x = x * 2\nreturn F.one_hot(x.long().abs().flatten()) + 1  # <-",
    "graph_break": "x = x * 2\ntorch._dynamo.graph_break()  # <-\nreturn x + 1",
    "time": "x = x * 2\nt = time.perf_counter()  # <-\nreturn x + 1",
    "datetime": "x = x * 2\nt = datetime.datetime.now()  # <-\nreturn x + 1",
    "random": "x = x * 2\np = random.random()  # <-\nreturn x * p",
    "torch_manual_seed": "x = x * 2\ntorch.manual_seed(0)  # <-\nreturn x + 1",
    "np_random_unsupported": "x = x * 2\nm = np.random.permutation(4)  # <-\nreturn x + 1",
    "np_random_scalar": "x = x * 2\nreturn x + np.random.rand()  # <-",
    "open": "x = x * 2\nfh = open(os.devnull, 'w')  # <-\nfh.close()\nreturn x + 1",
    "torch_save": "x = x * 2\ntorch.save(x, os.devnull)  # <-\nreturn x + 1",
    "stdout_write": "x = x * 2\nsys.stdout.write('')  # <-\nreturn x + 1",
    "os_path_exists": "x = x * 2\ne = os.path.exists('/')  # <-\nreturn x + 1",
    "json_dumps": "x = x * 2\ns = json.dumps([1])  # <-\nreturn x + 1",
    "np_save": "x = x * 2\nnp.save(os.devnull, x.numpy())  # <-\nreturn x + 1",
    "breakpoint": "x = x * 2\nbreakpoint()  # <-\nreturn x + 1",
    "pdb": "x = x * 2\npdb.set_trace()  # <-\nreturn x + 1",
    "deepcopy_tensor": "x = x * 2\ny = copy.deepcopy(x)  # <-\nreturn y + 1",
    "str_tensor": "x = x * 2\ns = str(x)  # <-\nreturn x + 1",
    "repr_tensor": "x = x * 2\ns = repr(x)  # <-\nreturn x + 1",
    "percent_tensor": "x = x * 2\ns = '%s' % (x,)  # <-\nreturn x + 1",
    "grad:backward": "y = x * 2\ny.sum().backward()  # <-\nreturn x.grad + 1",
    "grad:autograd_grad": "y = (x * 2).sum()\ng = torch.autograd.grad(y, x)  # <-\nreturn g[0] + 1",
    "grad:requires_grad_": "y = x.detach() * 2\ny.requires_grad_(True)  # <-\nreturn y + 1",
    "set_requires_grad": "x = x * 2\nx.requires_grad = True  # <-\nreturn x + 1",
    "set_data": "x = x * 2\ny = torch.zeros(4, 3)\ny.data = x  # <-\nreturn y + 1",
    "resize_": "x = x * 2\nx.resize_(12)  # <-\nreturn x + 1",
    "layer_in_forward": "x = x * 2\nlin = nn.Linear(3, 3)  # <-\nreturn lin(x)",
    "class_in_forward": "x = x * 2\nclass Tmp:  # <-\n    pass\nreturn x + 1",
    "getframe": "x = x * 2\nf = sys._getframe()  # <-\nreturn x + 1",
    "disabled": "x = x * 2\nx = helper_disabled(x)  # <-\nreturn x + 1",
}
EXTRA = """
@torch.compiler.disable
def helper_disabled(t):
    return t + 1
"""
SPECIAL: dict[str, str] = {
    "gru": """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 3, batch_first=True)

    def forward(self, x):
        x = x * 2
        out, h = self.rnn(x)  # <-
        return out + 1


def compile_example():
    return M(), (torch.randn(2, 4, 3),)
""",
}


def module_for(name: str, body: str) -> str:
    grad = name.startswith("grad:")
    fwd = textwrap.indent(body, " " * 8)
    arg = "torch.randn(4, 3, requires_grad=True)" if grad else "torch.randn(4, 3)"
    return (
        f"{HEADER}{EXTRA}\n\nclass M(nn.Module):\n    def forward(self, x):\n{fwd}\n\n\n"
        f"def compile_example():\n    return M(), ({arg},)\n"
    )


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict[str, Path] = {}
        sources = {n: module_for(n, b) for n, b in CASES.items()}
        sources.update({n: HEADER + EXTRA + s for n, s in SPECIAL.items()})
        for i, (name, src) in enumerate(sources.items()):
            p = root / f"case_{i:02d}.py"
            p.write_text(src, encoding="utf-8")
            files[name] = p
        out = root / "gt.json"
        cmd = [sys.executable, str(HERE / "groundtruth.py"), str(root), str(out)]
        cmd += [str(p) for p in files.values()]
        subprocess.run(cmd, cwd=tmp, capture_output=True, stdin=subprocess.DEVNULL, check=True)
        gt = json.loads(out.read_text())["files"]
        failures = 0
        print(f"{'case':<24}{'line':>5}  {'static':<8} {'torch':<22} result")
        for name, p in files.items():
            src = p.read_text()
            marked = next(i for i, ln in enumerate(src.splitlines(), 1) if "# <-" in ln)
            hints = analyze_path(p)
            breaks = gt[str(p.resolve())]["breaks"]
            dyn = sorted({b["gb_id"] or b["gb_type"] for b in breaks if b["line"] == marked})
            ok = len(hints) == 1 and hints[0].line == marked and hints[0].gb_id in dyn
            failures += not ok
            static = ",".join(str(h.gb_id) for h in hints) or "-"
            print(
                f"{name:<24}{marked:>5}  {static:<8} {','.join(dyn) or '-':<22} "
                f"{'ok' if ok else 'MISMATCH'}"
            )
        print(f"\n{len(files) - failures}/{len(files)} cases agree")
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
