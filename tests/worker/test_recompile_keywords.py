"""Recompile fixes in the kwargs of the example's calls, and a size the code singles out
(issue 31): each target's fix applied, or refused by the machine's timing alone; torch's own
count after the write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import check_json
from support.fix_workspace import eager_workspace, fix_json, recompile_counts

KEYWORDS_AND_SPECIAL = """import torch
from torch import nn


class Rows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x))


class Sampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, h, temperature=1.0):
        return torch.softmax(self.proj(h) / temperature, dim=-1)


class Special(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        if x.size(0) == 6:
            return self.lin(x) + 1
        return self.lin(x)


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, mask):
        return self.lin(x) * mask.unsqueeze(-1)


class Enc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8)

    def forward(self, batch):
        return self.emb(batch["input_ids"]).mean(1)


def compile_example_batch():
    torch.manual_seed(0)
    model = Enc().eval()
    return [(model, ({"input_ids": torch.randint(0, 50, (2, n))},)) for n in (5, 7, 9)]


def norm(x):
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)


def compile_example_norm():
    torch.manual_seed(0)
    return [(norm, (torch.randn(n, 8),)) for n in (4, 6, 8)]


def compile_example_rows():
    torch.manual_seed(0)
    model = Rows().eval()
    return [(model, (), {"x": torch.randn(n, 8)}) for n in (4, 6, 8)]


def compile_example_masked():
    torch.manual_seed(0)
    model = Masked().eval()
    return [(model, (torch.randn(2, n, 8), torch.ones(2, n))) for n in (5, 7, 9)]


def compile_example_sampler():
    torch.manual_seed(0)
    model = Sampler().eval()
    h = torch.randn(4, 8)
    return [(model, (h,), {"temperature": t}) for t in (0.5, 0.7, 1.3)]


def compile_example_special():
    torch.manual_seed(0)
    model = Special().eval()
    return [(model, (torch.randn(n, 8),)) for n in (4, 6, 8)]


def rms(x, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


BASE = 1.0


def ratio(x, *, scale):
    return x * (BASE / scale)


def compile_example_ratio():
    torch.manual_seed(0)
    x = torch.randn(4, 4)
    return [(ratio, (x,), {"scale": s}) for s in (0.5, 1.0, 2.0)]


def compile_example_rms():
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    return [(rms, (x,), {"eps": e}) for e in (1e-5, 1e-6, 1e-8)]
"""


def test_keyword_arguments_and_a_size_the_code_singles_out_are_fixed(tmp_path: Path) -> None:
    """A size or a number passed by keyword is marked, or passed as a 0-d tensor, in the
    kwargs of the example's calls; a size the code branches on (``x.size(0) == 6``) makes
    ``mark_dynamic`` raise, and ``maybe_mark_dynamic`` leaves torch one recompile, for the
    size singled out, where it made two; a tensor inside a batch dict is marked at its key; a
    mask whose length varies with the input's is
    marked with it (alone, torch would specialise the input on its equality with the mask's
    static length, and raise). A plain function's size is marked too (its compiled calls were
    compared with the state its last call left, not its first: every mark was refused). A
    keyword-only number torch guards with an exponent (``eps == 1e-05``) is passed as a 0-d
    tensor (the guard was read as no value's, the parameter as no argument's, and the
    tensor's own gradient, which the number never had, failed the gradients check). Other
    values of a number passed by keyword are tried as those passed by position are: at
    ``scale=0.0`` the original's Python division raises and the tensor's returns inf, so
    that rewrite is refused (it was verified on the example's values alone).
    torch's own count decides, after the write."""
    eager_workspace(tmp_path, m=KEYWORDS_AND_SPECIAL)
    _, doc, _ = check_json("m.py", "--checks", "recompiles", cwd=tmp_path)
    data = {f["target"].rsplit("::", 1)[-1]: f["data"] for f in doc["findings"]}
    assert data["compile_example_rows"]["mark_dynamic"]["keyword"] == "x", data
    assert data["compile_example_sampler"]["scalar_arg"]["keyword"] == "temperature", data
    assert data["compile_example_rms"]["scalar_arg"]["keyword"] == "eps", data
    assert data["compile_example_special"]["mark_dynamic"]["arg"] == 0, data
    assert data["compile_example_masked"]["mark_dynamic"]["also"] == [{"arg": 1, "dim": 1}]
    assert data["compile_example_batch"]["mark_dynamic"]["path"] == ["input_ids"], data
    before = recompile_counts(tmp_path, "m.py")
    assert before == {
        "compile_example_batch": 1,
        "compile_example_norm": 1,
        "compile_example_rows": 1,
        "compile_example_masked": 1,
        "compile_example_sampler": 1,
        "compile_example_special": 2,
        "compile_example_rms": 1,
        "compile_example_ratio": 1,
    }
    fixed = fix_json(tmp_path, "m.py", "--apply")
    want = {
        "compile_example_batch": ("mark-dynamic", 0),
        "compile_example_norm": ("mark-dynamic", 0),
        "compile_example_rows": ("mark-dynamic", 0),
        "compile_example_masked": ("mark-dynamic", 0),
        "compile_example_sampler": ("scalar-tensor", 0),
        "compile_example_special": ("maybe-mark-dynamic", 1),
        "compile_example_rms": ("scalar-tensor", 0),
    }
    done = {_name(f): f for f in fixed["applied"]}  # type: ignore[attr-defined]
    for name, (rule, _) in want.items():
        if name not in done or done[name]["rule"] != rule:
            # "no slower" is the machine's verdict as much as torch's (test_fixes.py's
            # ``_but_for_timing``): refused by it alone, every check before it passed.
            (f,) = [f for f in fixed["fixes"] if _name(f) == name]  # type: ignore[attr-defined]
            tried = [(f["rule"], _failed(f)), *((r["rule"], r["failed"]) for r in f["refused"])]
            assert (rule, ["no slower"]) in tried, f
    for f in done.values():
        checks = {c["name"]: c["ok"] for c in f["checks"]}
        assert checks["fewer compiles"] and checks["outputs equal"], f
        said = {c["name"]: c["detail"] for c in f["checks"]}
        if f["rule"] == "mark-dynamic":
            # The compiled calls that checked its outputs ran the marked tensors (copies that
            # keep torch's marks): one graph for every size, as the user's calls compile.
            assert said["no new recompile"].startswith("0 recompile(s)"), f
    assert "compile_example_ratio" not in done, done
    refused = [
        c["detail"]
        for f in fixed["fixes"]  # type: ignore[attr-defined]
        for c in f.get("checks", [])
        if c["name"] == "other numbers equal" and not c["ok"]
    ]
    assert any("scale=0.0" in d and "ZeroDivisionError" in d for d in refused), fixed
    text = (tmp_path / "m.py").read_text()
    marks = {
        "compile_example_rows": "torch._dynamo.mark_dynamic(__call[2]['x'], 0)",
        "compile_example_special": "torch._dynamo.maybe_mark_dynamic(__call[1][0], 0)",
        "compile_example_masked": "torch._dynamo.mark_dynamic(__call[1][1], 1)",
        "compile_example_batch": "torch._dynamo.mark_dynamic(__call[1][0]['input_ids'], 1)",
    }
    for name, mark in marks.items():
        assert (mark in text) == (done.get(name, {}).get("rule") == want[name][0]), name
    after = recompile_counts(tmp_path, "m.py")
    for name, (rule, left) in want.items():
        fixed_here = done.get(name, {}).get("rule") == rule
        assert after[name] == (left if fixed_here else before[name]), (name, after)
    assert after["compile_example_ratio"] == 1, after


def _name(fix: dict[str, Any]) -> str:
    (target,) = fix["targets"]
    return str(target).rsplit("::", 1)[-1]


def _failed(fix: dict[str, Any]) -> list[str]:
    return [c["name"] for c in fix["checks"] if not c["ok"]]
