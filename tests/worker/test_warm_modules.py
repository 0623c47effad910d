"""Workspace modules kept warm between analyses (worker/warmmodules.py): a module that a fresh
import could not give differently is not executed again after an edit of the file that imports
it; anything with state, rebound from outside, changed on disk or importing what is executed
again is. Each analysis equals one from scratch (every module imported afresh)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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


def scale(x, factor=2):
    return torch.tanh(x) * factor * SCALE


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
    # An import that may fail, or a test at import, reads state: the module runs each time.
    assert not pure("try:\n    import numpy\nexcept ImportError:\n    numpy = None\n")
    assert not pure("import sys\nif sys.flags.debug:\n    X = 1\n")
    assert pure("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    assert not pure("import torch\ndef f(x, flag=torch.float32):\n    return x\n")
    assert not pure(STATEFUL), "a module-level list"
    assert not pure("class A:\n    cache = {}\n"), "a class's dict"
    assert not pure("import functools\n@functools.lru_cache\ndef f(x):\n    return x\n")
    assert not pure("def f(x, seen=[]):\n    return x\n"), "a mutable default"
    assert not pure("N = 0\ndef bump():\n    global N\n    N += 1\n")
    assert not pure("import torch\nW = torch.ones(3)\n"), "a tensor made at import"
    assert not pure("import other\nother.X = 1\n"), "changes another module"
    assert not pure("from other import *\n")
    assert not pure("print('hello')\n")


SP_MAIN = """import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "{v}"))
import torch
from torch import nn
from sp_helpers import act


class Net(nn.Module):
    def forward(self, x):
        return act(x) * 2


def compile_example():
    return Net(), (torch.randn(2, 4),)
"""

IV_HELPERS = """import torch
import torch._dynamo.config as dcfg

CAPTURE = dcfg.capture_scalar_outputs


def total(x):
    if CAPTURE:
        return x * 2
    print("no capture")
    return x
"""

IV_MAIN = """import torch
import torch._dynamo.config
torch._dynamo.config.capture_scalar_outputs = {flag}
from iv_helpers import total
torch._dynamo.config.capture_scalar_outputs = False
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return total(x) + 1


def compile_example():
    return Net(), (torch.randn(2, 4),)
"""

OI_HELPERS = """import torch

try:
    from oi_fast import op
except ImportError:
    op = None


def act(x):
    if op is not None:
        return op(x)
    return torch.relu(x)
"""

OI_FAST = """import torch


def op(x):
    print("fast op")
    return torch.relu(x)
"""

OI_MAIN = """import torch
from torch import nn
from oi_helpers import act


class Net(nn.Module):
    def forward(self, x):
        return act(x) * {k}


def compile_example():
    return Net(), (torch.randn(2, 4),)
"""

SUB_BASE = """from torch import nn


class Plugin(nn.Module):
    pass
"""

SUB_MAIN = """import torch
from sub_base import Plugin


class Double(Plugin):
    def forward(self, x):
        print("double")
        return x * 2


def compile_example():
    x = torch.randn(2, 4) + {k}
    return [(cls(), (x,)) for cls in Plugin.__subclasses__()]
"""

# From a hostile review: what a fresh import would find differently. Each scenario's last state
# must show the break the fresh import gives (``expect``: file and line), and equal scratch.
WARM_SCENARIOS = {
    # The edited file puts another folder first on sys.path: its helpers are another file.
    "sys-path": (
        [
            {
                "v1/sp_helpers.py": "import torch\n\n\ndef act(x):\n    return torch.relu(x)\n",
                "v2/sp_helpers.py": "import torch\n\n\ndef act(x):\n    print('v2')\n"
                "    return torch.relu(x)\n",
                "sp_main.py": SP_MAIN.format(v="v1"),
            },
            {"sp_main.py": SP_MAIN.format(v="v2")},
        ],
        ("v2/sp_helpers.py", 5),
    ),
    # A helper reads a library setting at import; the edited file sets it before importing.
    "import-time-value": (
        [
            {"iv_helpers.py": IV_HELPERS, "iv_main.py": IV_MAIN.format(flag=True)},
            {"iv_main.py": IV_MAIN.format(flag=False)},
        ],
        ("iv_helpers.py", 10),
    ),
    # A helper imports an optional module that appears later.
    "optional-import": (
        [
            {"oi_helpers.py": OI_HELPERS, "oi_main.py": OI_MAIN.format(k=2)},
            {"oi_fast.py": OI_FAST, "oi_main.py": OI_MAIN.format(k=3)},
        ],
        ("oi_fast.py", 5),
    ),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """An engine of its own: a scenario changes its worker's sys.path for good."""
    ws = tmp_path_factory.mktemp("warm-hostile")
    cfg, problems = load(ws, {"backend": "eager"})
    assert not problems
    with Engine(ws, cfg) as eng:
        yield eng


@pytest.mark.parametrize("name", sorted(WARM_SCENARIOS))
def test_a_fresh_import_would_find_the_same(hostile: Engine, name: str) -> None:
    states, (expect_file, expect_line) = WARM_SCENARIOS[name]
    main = next(f for f in states[0] if f.endswith("_main.py"))
    for state in states:
        for rel, text in state.items():
            (hostile.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (hostile.root / rel).write_text(text)
        warm = hostile.analyze_file(hostile.root / main, ["breaks"], reuse=True)
        scratch = hostile.analyze_file(hostile.root / main, ["breaks"])
        assert comparable(warm) == comparable(scratch), (name, state)
    lines = {
        (Path(f.path).relative_to(hostile.root).as_posix(), f.line) for f in warm.all_findings()
    }
    assert (expect_file, expect_line) in lines, (name, lines)


def test_a_subclass_made_again_is_not_kept(hostile: Engine) -> None:
    """A kept class would gather a subclass per run of the edited file (a plugin registry read
    through ``__subclasses__()``): one target each time, as from scratch."""
    (hostile.root / "sub_base.py").write_text(SUB_BASE)
    for k in range(3):
        (hostile.root / "sub_main.py").write_text(SUB_MAIN.format(k=k))
        warm = hostile.analyze_file(hostile.root / "sub_main.py", ["breaks"], reuse=True)
        assert len(warm.reports) == 1, [r.target for r in warm.reports]
