"""Static analysis time per 1,000 lines of model code.

    .venv/bin/python bench/static/speed.py [--repeats N] [--json OUT]

Bodies measured (``analyze_source`` end to end, ``ast.parse`` included):

- **corpus**: every corpus and example_workspace file concatenated into one module (class
  names and ``compile_example`` functions made unique so that every model stays a target);
- **generated**: a realistic GPT-style model file (attention, MLP, MoE routing, a training
  loop outside the compiled code, examples) repeated with fresh names up to ~10,000 lines;
- **files**: each example_workspace file on its own (what one keystroke costs).

Each body is analysed once to warm up, then ``--repeats`` times; the median, the interquartile
range and min/max are reported, with ``ast.parse`` alone for scale. Target: < 20 ms per 1,000
lines.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

from dynamo_lens.static import analyze_source, analyze_tree  # noqa: E402

TEMPLATE = """
class Attention{i}(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4, dropout: float = 0.1) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(128, 128)).bool())

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        if attn_mask is not None:
            att = att + attn_mask
        att = self.dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class MLP{i}(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.out = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.fc(x)))


class Router{i}(nn.Module):
    def __init__(self, dim: int = 64, n_experts: int = 4) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, n_experts)
        self.experts = nn.ModuleList(MLP{i}(dim) for _ in range(n_experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, idx = self.gate(x).softmax(-1).topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            hit = (idx == e).any(-1)
            out = out + expert(x) * hit.unsqueeze(-1)
        if out.abs().max() > 1e4:
            out = out.clamp(-1e4, 1e4)
        return out


class Block{i}(nn.Module):
    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.ln2 = nn.LayerNorm(dim)
        self.attn = Attention{i}(dim)
        self.moe = Router{i}(dim)
        self.stats = {{}}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        h = self.moe(self.ln2(x))
        self.stats["rms"] = h.pow(2).mean().sqrt().item()
        return x + h


class GPT{i}(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 64, depth: int = 2) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(128, dim)
        self.blocks = nn.ModuleList([Block{i}(dim) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        b, t = idx.size()
        assert t <= 128, f"sequence too long: {{t}}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def train_{i}(model: nn.Module, steps: int = 10) -> None:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(steps):
        idx = torch.randint(0, 100, (4, 32))
        logits, loss = model(idx, idx)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"step {{step}} loss {{loss.item():.4f}}")


def compile_example_{i}():
    model = GPT{i}().eval()
    return [(model, (torch.randint(0, 100, (2, t)),)) for t in (16, 32)]
"""

HEADER = """import math

import torch
import torch.nn as nn
import torch.nn.functional as F
"""


def generated(lines: int) -> str:
    parts = [HEADER]
    i = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(TEMPLATE.format(i=i))
        i += 1
    return "\n".join(parts)


def concatenated() -> str:
    files = sorted((REPO / "bench" / "corpora" / "static").glob("*.py"))
    ws = REPO / "example_workspace"
    if ws.is_dir():
        files += sorted(p for p in ws.rglob("*.py") if "broken" not in p.parts)
    parts: list[str] = []
    for n, f in enumerate(files):
        text = f.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        # Unique class and example names, so that every file's models remain targets.
        names = [c.name for c in tree.body if isinstance(c, ast.ClassDef)]
        for name in names:
            text = re.sub(rf"\b{name}\b", f"{name}_{n}", text)
        text = re.sub(r"\bdef compile_example(\w*)\(", rf"def compile_example\1_{n}(", text)
        parts.append(text)
    return "\n\n".join(parts)


def measure(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    """Wall-clock (perf_counter) statistics, plus the median CPU time of this process, which
    other load on the machine inflates far less than wall-clock time."""
    fn()  # warm-up
    samples = []
    cpu = []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    samples.sort()
    q = statistics.quantiles(samples, n=4) if len(samples) >= 4 else [samples[0], 0, samples[-1]]
    return {
        "median_ms": statistics.median(samples),
        "iqr_ms": q[2] - q[0],
        "min_ms": samples[0],
        "max_ms": samples[-1],
        "cpu_median_ms": statistics.median(cpu),
    }


def _parse_without_gc(text: str) -> None:
    # The same conditions as analyze_source, which pauses the cyclic GC while it works.
    gc.disable()
    try:
        ast.parse(text)
    finally:
        gc.enable()


def bench_body(name: str, text: str, repeats: int) -> dict[str, Any]:
    n_lines = text.count("\n") + 1
    n_code = sum(1 for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#"))
    hints = analyze_source(text, f"/bench/{name}.py")
    full = measure(lambda: analyze_source(text, f"/bench/{name}.py"), repeats)
    parse = measure(lambda: _parse_without_gc(text), repeats)
    tree = ast.parse(text)
    only = measure(lambda: analyze_tree(tree, text, f"/bench/{name}.py"), repeats)
    per_k = full["median_ms"] * 1000 / n_lines
    return {
        "body": name,
        "lines": n_lines,
        "code_lines": n_code,
        "hints": len(hints),
        "analyze": full,
        "parse_only": parse,
        "analyze_tree": only,
        "ms_per_1000_lines": per_k,
        "ms_per_1000_code_lines": full["median_ms"] * 1000 / n_code,
        "min_ms_per_1000_lines": full["min_ms"] * 1000 / n_lines,
        "tree_ms_per_1000_lines": only["median_ms"] * 1000 / n_lines,
        "cpu_ms_per_1000_lines": full["cpu_median_ms"] * 1000 / n_lines,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    rows = [
        bench_body("corpus", concatenated(), args.repeats),
        bench_body("generated_1k", generated(1000), args.repeats),
        bench_body("generated_10k", generated(10_000), max(5, args.repeats // 3)),
    ]
    ws = REPO / "example_workspace" / "models"
    singles = []
    for f in sorted(ws.glob("*.py")) if ws.is_dir() else []:
        text = f.read_text(encoding="utf-8")
        m = measure(lambda text=text, f=f: analyze_source(text, str(f)), args.repeats)
        singles.append({"file": f.name, "lines": text.count("\n") + 1, **m})

    print(
        f"{'body':<14}{'lines':>7}{'hints':>6}{'median':>9}{'IQR':>7}{'min':>7}{'max':>8}"
        f"{'parse':>8}{'no-parse':>10}{'ms/1k med':>11}{'ms/1k min':>11}{'no-parse/1k':>13}"
        f"{'cpu/1k':>8}"
    )
    for r in rows:
        a, p, t = r["analyze"], r["parse_only"], r["analyze_tree"]
        print(
            f"{r['body']:<14}{r['lines']:>7}{r['hints']:>6}{a['median_ms']:>9.2f}"
            f"{a['iqr_ms']:>7.2f}{a['min_ms']:>7.2f}{a['max_ms']:>8.2f}{p['median_ms']:>8.2f}"
            f"{t['median_ms']:>10.2f}{r['ms_per_1000_lines']:>11.2f}"
            f"{r['min_ms_per_1000_lines']:>11.2f}{r['tree_ms_per_1000_lines']:>13.2f}"
            f"{r['cpu_ms_per_1000_lines']:>8.2f}"
        )
    print("(ms; 'no-parse': analyze_tree on a parsed module; 'cpu/1k': median process CPU time)")
    if singles:
        print("\nsingle files (one keystroke):")
        for s in singles:
            print(
                f"  {s['file']:<24}{s['lines']:>5} lines  median {s['median_ms']:.2f} ms"
                f"  (IQR {s['iqr_ms']:.2f}, max {s['max_ms']:.2f})"
            )
    load = os.getloadavg()
    print(
        f"\nmachine: {os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (1/5/15 min); Python {sys.version.split()[0]}"
    )
    if args.json:
        env = {"cpus": os.cpu_count(), "loadavg": load, "python": sys.version.split()[0]}
        Path(args.json).write_text(
            json.dumps({"bodies": rows, "files": singles, "machine": env}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
