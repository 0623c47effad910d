"""Workspace modules kept warm between analyses (worker/warmmodules.py): a module that a fresh
import could not give differently is not executed again after an edit of the file that imports
it; anything with state, rebound from outside, changed on disk or importing what is executed
again is. Each analysis equals one from scratch (every module imported afresh)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.worker import warmmodules
from test_incremental import comparable

PURE = '''"""Helpers a fresh import could not give differently."""
import logging

import torch

logger = logging.getLogger(__name__)
SCALE = 2
SHAPE = (4, 8)
FLAG = False


def scale(x, factor=SCALE):
    return torch.tanh(x) * factor


class Config:
    width: int = 8
'''

# A cache filled by the first call: kept warm, the second analysis would see it full (no
# print, no break); a fresh import starts it empty again.
STATEFUL = """import torch

CALLS = []


def first_call_says(x):
    if not CALLS:
        CALLS.append(1)
        print("first call")
    return x + 1
"""

MODEL = """import torch
from torch import nn

import cfg_flags
from pure_helpers import scale
from stateful import first_call_says
{extra}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = scale(self.fc(x))
        h = first_call_says(h)
        if cfg_flags.FLAG:
            print("flag on")
        return h


def compile_example():
    torch.manual_seed(0)
    return Net(), (torch.randn(4, 8),)
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, list[str]]]:
    ws = tmp_path_factory.mktemp("warm")
    cfg, problems = load(ws, {"backend": "eager"})
    assert not problems
    logs: list[str] = []
    with Engine(ws, cfg, on_log=logs.append) as eng:
        yield eng, logs


def _analyse(engine: Engine, logs: list[str], model: str) -> str:
    """The warm analysis of ``model`` (equal to one from scratch), and what it kept warm."""
    path = engine.root / "model.py"
    path.write_text(model)
    logs.clear()
    warm = engine.analyze_file(path, ["breaks"], reuse=True)
    kept = "; ".join(m for m in logs if "kept warm" in m)
    scratch = engine.analyze_file(path, ["breaks"])
    assert comparable(warm) == comparable(scratch), kept
    return kept


def test_only_what_cannot_change_stays_warm(engine: tuple[Engine, list[str]]) -> None:
    eng, logs = engine
    (eng.root / "pure_helpers.py").write_text(PURE)
    (eng.root / "stateful.py").write_text(STATEFUL)
    (eng.root / "cfg_flags.py").write_text("FLAG = False\n")
    _analyse(eng, logs, MODEL.format(extra=""))
    # An edit of the model: the pure helpers and the flags stay; the stateful module runs
    # again (its print, a break, is found each time: equal to scratch, checked in _analyse).
    kept = _analyse(eng, logs, MODEL.format(extra="\nEDIT = 1\n"))
    assert "pure_helpers" in kept and "cfg_flags" in kept, kept
    assert "stateful" not in kept, kept
    # The model rebinds a flag at import: the next analysis must not inherit it.
    kept = _analyse(eng, logs, MODEL.format(extra="\ncfg_flags.FLAG = True\n"))
    kept = _analyse(eng, logs, MODEL.format(extra=""))
    assert "cfg_flags" not in kept, "a module whose names were rebound was kept"
    # A helper changed on disk runs again, and what imports it.
    (eng.root / "pure_helpers.py").write_text(PURE.replace("SCALE = 2", "SCALE = 3"))
    kept = _analyse(eng, logs, MODEL.format(extra="\nEDIT = 2\n"))
    assert "pure_helpers" not in kept, kept


def test_what_the_source_shows_decides_purity() -> None:
    def pure(src: str) -> bool:
        return warmmodules._parse(src.encode())[0]

    assert pure(PURE)
    assert pure("import torch\nif __name__ == '__main__':\n    main()\n")
    assert pure("try:\n    import numpy\nexcept ImportError:\n    numpy = None\n")
    assert not pure(STATEFUL), "a module-level list"
    assert not pure("class A:\n    cache = {}\n"), "a class's dict"
    assert not pure("import functools\n@functools.lru_cache\ndef f(x):\n    return x\n")
    assert not pure("def f(x, seen=[]):\n    return x\n"), "a mutable default"
    assert not pure("N = 0\ndef bump():\n    global N\n    N += 1\n")
    assert not pure("import torch\nW = torch.ones(3)\n"), "a tensor made at import"
    assert not pure("import other\nother.X = 1\n"), "changes another module"
    assert not pure("from other import *\n")
    assert not pure("print('hello')\n")
