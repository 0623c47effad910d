"""One ``compile_example`` that returns several models: after an edit, the worker runs the
example once and analyses only the targets the edit reaches (worker/targetkeys.py); the others
keep their results, moved with the text. Each result equals a from-scratch analysis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import targetkeys
from dynamo_lens.worker.usercode import Call, Target, Unit
from test_incremental import comparable

ZOO = """import torch
from torch import nn

from helpers import scale

SIZE = 16


def shared(x):
    return x + 1


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(SIZE, SIZE)

    def forward(self, x):
        h = shared(self.fc(x))
        if h.sum() > 0:  # data-dependent: a break
            h = h * 2
        return h


class Talker(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(SIZE, SIZE)

    def forward(self, x):
        h = self.fc(x)
        print("talking")  # a break
        return h


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(SIZE, SIZE)

    def forward(self, x):
        return scale(self.fc(x))


def compile_example():
    torch.manual_seed(0)
    x = torch.randn(4, SIZE)
    return [(Gate(), (x,)), (Talker(), (x,)), (Scaled(), (x,)), (Gate(), (x * 2,))]
"""

HELPERS = """import torch


def scale(x):
    return torch.tanh(x) * 2
"""

CHECKS = ["breaks", "recompiles"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    ws = tmp_path_factory.mktemp("zoo")
    cfg, problems = load(ws, {"backend": "eager"})
    assert not problems
    with Engine(ws, cfg) as eng:
        yield eng


def _write(engine: Engine, zoo: str = ZOO, helpers: str = HELPERS) -> Path:
    (engine.root / "helpers.py").write_text(helpers)
    path = engine.root / "zoo.py"
    path.write_text(zoo)
    return path


def _edit(engine: Engine, zoo: str, helpers: str = HELPERS) -> tuple[int, int]:
    """(targets analysed again, targets reused) by the analysis after the edit; its result
    must equal a from-scratch analysis of the same bytes."""
    path = _write(engine, zoo, helpers)
    ran, reused = engine.targets_run, engine.targets_reused
    inc = engine.analyze_file(path, CHECKS, reuse=True)
    fresh = engine.analyze_file(path, CHECKS)
    assert comparable(inc) == comparable(fresh)
    assert [r.target for r in inc.reports] == [r.target for r in fresh.reports]
    return engine.targets_run - ran, engine.targets_reused - reused


def test_an_edit_reaches_only_the_targets_that_run_its_code(engine: Engine) -> None:
    path = _write(engine)
    first = engine.analyze_file(path, CHECKS, reuse=True)
    assert [r.break_count for r in first.reports] == [1, 1, 0, 1], first.reports
    # A line in Talker.forward, above its break: one target of four runs, its break moves.
    talker = ZOO.replace('        print("talking")', '        h = h - 1\n        print("talking")')
    assert _edit(engine, talker) == (1, 3)
    # Gate's code: both of its targets (two entries built from it), not the others.
    gate = talker.replace("        if h.sum() > 0:", "        h = h + 0\n        if h.sum() > 0:")
    assert _edit(engine, gate) == (2, 2)
    # A helper in another file that only Scaled calls.
    assert _edit(engine, gate, HELPERS.replace("* 2", "* 3")) == (1, 3)
    # A module constant every model reads (and the example too): all four run again.
    assert _edit(engine, gate.replace("SIZE = 16", "SIZE = 8")) == (4, 0)


def test_an_edit_of_the_example_runs_every_target(engine: Engine) -> None:
    path = _write(engine)
    engine.analyze_file(path, CHECKS, reuse=True)
    # The example builds every target: the weights or inputs may change for each.
    ran, reused = _edit(engine, ZOO.replace("manual_seed(0)", "manual_seed(1)"))
    assert (ran, reused) == (4, 0)


def test_a_comment_reuses_every_target_without_a_worker(engine: Engine) -> None:
    path = _write(engine)
    engine.analyze_file(path, CHECKS, reuse=True)
    units = engine.units_reused
    assert _edit(engine, "# a comment that moves every line\n" + ZOO) == (0, 0)
    assert engine.units_reused == units + 1


def _target(fn: object, *args: object) -> Target:
    return Target("compile_example", fn, [Call(tuple(args), {})], "", 1, "example")


def _key(ws: Path, target: Target) -> str | None:
    unit = Unit("compile_example", "example", str(ws / "zoo.py"), 1, "compile_example")
    key = targetkeys.key_of(target, unit, Workspace(ws, ()), {})
    return None if key is None else key.key


def test_a_target_key_reads_weights_inputs_and_attributes(tmp_path: Path) -> None:
    (tmp_path / "zoo.py").write_text("def compile_example():\n    pass\n")
    torch.manual_seed(0)
    model, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    base = _key(tmp_path, _target(model, x))
    assert base is not None and base == _key(tmp_path, _target(model, x.clone()))
    assert base != _key(tmp_path, _target(model, x + 1)), "other inputs"
    assert base != _key(tmp_path, _target(model, x.double())), "another dtype"
    with torch.no_grad():
        model.weight[0, 0] += 1  # in place: the same tensor, a new version
    changed = _key(tmp_path, _target(model, x))
    assert changed != base, "other weights"
    model.extra_flag = True  # an attribute forward might read
    assert _key(tmp_path, _target(model, x)) != changed
    # State it cannot read: no key, so the target is analysed every time.
    assert _key(tmp_path, _target(model, x, torch.Generator())) is None
