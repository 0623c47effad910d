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


def test_an_example_that_does_not_seed_draws_the_same_inputs(engine: Engine) -> None:
    """The README's own example draws its inputs unseeded: the worker seeds before it runs, so
    an edit of one model still reuses the others."""
    unseeded = ZOO.replace("    torch.manual_seed(0)\n", "")
    path = _write(engine, unseeded)
    engine.analyze_file(path, CHECKS, reuse=True)
    line = '        print("talking")'
    talker = unseeded.replace(line, "        h = h - 1\n" + line)
    assert _edit(engine, talker) == (1, 3)


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
    keys, _ = targetkeys.keys_of([target], unit, Workspace(ws, ()))
    return keys[0].key if keys else None


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
    setattr(model, "extra_flag", True)  # noqa: B010 (an attribute forward might read)
    assert _key(tmp_path, _target(model, x)) != changed
    # State it cannot read: no key, so the target is analysed every time.
    assert _key(tmp_path, _target(model, x, torch.Generator())) is None
    # A subclass of a builtin keeps its attributes and its value in the key.
    tagged = type("Cfg", (dict,), {})(scale=2)
    tagged.verbose = True
    verbose = _key(tmp_path, _target(model, x, tagged))
    tagged.verbose = False
    assert _key(tmp_path, _target(model, x, tagged)) != verbose
    width = type("Width", (int,), {})
    assert _key(tmp_path, _target(model, x, width(1))) != _key(
        tmp_path, _target(model, x, width(2))
    )
    # A conjugate view is keyed; an expanded tensor by its storage, not a 1 GiB copy.
    assert _key(tmp_path, _target(model, torch.randn(3, dtype=torch.cfloat).conj())) is not None
    wide = torch.randn(1, 1024).expand(256 * 1024, 1024)
    assert _key(tmp_path, _target(model, wide)) is not None


# From a hostile review: cases where a target's code, or what it sees, changes without its own
# class changing. Each state's incremental result must equal a from-scratch one.
SCENARIOS: dict[str, list[dict[str, str]]] = {
    # A workspace block inside a wrapper (or an nn.Sequential): its code is the target's too.
    "injected": [
        {
            "inj_blocks.py": "from torch import nn\n\n\nclass Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
            "        return self.fc(x)\n",
            "inj.py": "import torch\nfrom torch import nn\nfrom inj_blocks import Block\n\n\n"
            "class Other(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
            "def compile_example():\n    torch.manual_seed(0)\n    x = torch.randn(2, 4)\n"
            "    return [(nn.Sequential(Block(), nn.ReLU()), (x,)), (Other(), (x,))]\n",
        },
        {"inj_blocks.py": "return self.fc(x)->print('block')\n        return self.fc(x)"},
    ],
    # A partial of a method: the method's class is the target's code.
    "partial": [
        {
            "par.py": "import functools\nimport torch\nfrom torch import nn\n\n\n"
            "class Net(nn.Module):\n    def forward(self, x, scale):\n"
            "        return x * scale\n\n\nclass Other(nn.Module):\n"
            "    def forward(self, x):\n        return x * 2\n\n\ndef compile_example():\n"
            "    torch.manual_seed(0)\n    x = torch.randn(2, 4)\n"
            "    return [(functools.partial(Net().forward, scale=2.0), (x,)), (Other(), (x,))]\n",
        },
        {"par.py": "return x * scale->print('net')\n        return x * scale"},
    ],
    # A helper the example calls sets a global a forward reads: the example's reach.
    "setup": [
        {
            "setup_conf.py": 'MODE = "fast"\n',
            "setup_helpers.py": "import setup_conf\n\n\ndef setup():\n"
            '    setup_conf.MODE = "debug"\n',
            "setup_main.py": "import torch\nfrom torch import nn\nimport setup_conf\n"
            "from setup_helpers import setup\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n        if setup_conf.MODE == 'debug':\n"
            "            print('debugging')\n        return x * 2\n\n\nclass Other(nn.Module):\n"
            "    def forward(self, x):\n        return x + 1\n\n\ndef compile_example():\n"
            "    setup()\n    torch.manual_seed(0)\n    x = torch.randn(2, 4)\n"
            "    return [(Net(), (x,)), (Other(), (x,))]\n",
        },
        {"setup_helpers.py": '"debug"->"fast"'},
    ],
    # One target's forward writes a module's dict that the other's reads: not independent.
    "shared-global": [
        {
            "glob_common.py": "STATE = {}\n",
            "glob_a.py": "from torch import nn\nimport glob_common\n\n\nclass A(nn.Module):\n"
            "    def forward(self, x):\n        glob_common.STATE['on'] = True\n"
            "        return x + 1\n",
            "glob_main.py": "import torch\nfrom torch import nn\nimport glob_common\n\n\n"
            "class B(nn.Module):\n    def forward(self, x):\n"
            "        if glob_common.STATE.get('on'):\n            print('on')\n"
            "        return x * 2\n\n\ndef compile_example():\n    from glob_a import A\n\n"
            "    torch.manual_seed(0)\n    x = torch.randn(2, 4)\n"
            "    return [(A(), (x,)), (B(), (x,))]\n",
        },
        {"glob_a.py": "True->False"},
    ],
    # Two targets share a model with a Python counter its forward bumps.
    "shared-counter": [
        {
            "counter.py": "import torch\nfrom torch import nn\n\n\nclass Counted(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.calls = 0\n\n"
            "    def forward(self, x):\n        self.calls += 1\n        if self.calls > 8:\n"
            "            print('warm')\n        return x * 2\n\n\nclass Wrap(nn.Module):\n"
            "    def __init__(self, inner):\n        super().__init__()\n"
            "        self.inner = inner\n\n    def forward(self, x):\n"
            "        return self.inner(x) + 1\n\n\ndef compile_example():\n"
            "    torch.manual_seed(0)\n    x = torch.randn(2, 4)\n    m = Counted()\n"
            "    return [(m, (x,)), (Wrap(m), (x,))]\n",
        },
        {"counter.py": "+ 1->+ 2"},
    ],
    # A second review's: a lambda written in the example; its setting changes.
    "local-lambda": [
        {
            "lam.py": "import torch\nfrom torch import nn\n\n\nclass C(nn.Module):\n"
            "    def forward(self, x):\n        n = x.sum().item()\n        return x * n\n\n\n"
            "def compile_example():\n"
            "    torch._dynamo.config.capture_scalar_outputs = False\n"
            "    x = torch.randn(2, 3)\n    return [(lambda t: t + 1, (x,)), (C(), (x,))]\n",
        },
        {"lam.py": "= False->= True"},
    ],
    # One target's constructor sets a setting the other's forward depends on.
    "constructor-setting": [
        {
            "ctor.py": "import torch\nfrom torch import nn\n\n\nclass A(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        torch._dynamo.config.capture_scalar_outputs = False\n\n"
            "    def forward(self, x):\n        return x + 1\n\n\nclass B(nn.Module):\n"
            "    def forward(self, x):\n        n = x.sum().item()\n        return x * n\n\n\n"
            "def compile_example():\n    x = torch.randn(2, 3)\n"
            "    return [(A(), (x,)), (B(), (x,))]\n",
        },
        {"ctor.py": "= False->= True"},
    ],
    # One target's forward writes a class attribute the other's reads.
    "class-attribute": [
        {
            "cattr.py": "import torch\nfrom torch import nn\n\n\nclass Cfg:\n    mode = 0\n\n\n"
            "class A(nn.Module):\n    def forward(self, x):\n        Cfg.mode = 1\n"
            "        return x + 1\n\n\nclass B(nn.Module):\n    def forward(self, x):\n"
            "        if Cfg.mode == 2:\n            torch._dynamo.graph_break()\n"
            "        return x * 2\n\n\ndef compile_example():\n    x = torch.randn(2, 3)\n"
            "    return [(A(), (x,)), (B(), (x,))]\n",
        },
        {"cattr.py": "Cfg.mode = 1->Cfg.mode = 2"},
    ],
}


def _apply(ws: Path, state: dict[str, str]) -> None:
    """Writes a state: a file's text, or an edit of it ("a->b": a replaced by b)."""
    for name, text in state.items():
        path = ws / name
        if "->" in text and path.exists():
            old, new = text.split("->")
            assert old in path.read_text(), (name, old)
            path.write_text(path.read_text().replace(old, new))
        else:
            path.write_text(text)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_what_a_target_sees_through_its_objects_is_in_its_key(engine: Engine, name: str) -> None:
    states = SCENARIOS[name]
    main = next(f for f in states[0] if "compile_example" in states[0][f])
    for state in states:
        _apply(engine.root, state)
        path = engine.root / main
        inc = engine.analyze_file(path, CHECKS, reuse=True)
        fresh = engine.analyze_file(path, CHECKS)
        assert comparable(inc) == comparable(fresh), (name, state)


def test_a_job_stopped_in_one_target_keeps_the_others(tmp_path: Path) -> None:
    """Talker, edited to crash the worker as it is traced: the three targets the edit cannot
    reach keep the results the engine holds for them, in the example's order, beside the
    error; the whole is never kept as the file's result. An engine of its own: the shared
    one's workspace holds the modules the tests above wrote, whose state its keys watch."""
    cfg, problems = load(tmp_path, {"backend": "eager"})
    assert not problems
    with Engine(tmp_path, cfg) as engine:
        path = _write(engine)
        before = engine.analyze_file(path, CHECKS, reuse=True)
        line = '        print("talking")'
        path = _write(
            engine, ZOO.replace(line, line + "\n        __import__('ctypes').string_at(0)")
        )
        res = engine.analyze_file(path, CHECKS, reuse=True)
        assert res.interrupted and res.stopped
        [err] = [f for f in res.all_findings() if f.kind.value == "error"]
        assert err.message.startswith(
            "Analysis stopped in the graph-break check of compile_example"
        )
        assert "segmentation fault" in err.message
        kept = [r.target for r in res.reports]
        assert kept == [before.reports[i].target for i in (0, 2, 3)], kept
        assert [r.break_count for r in res.reports] == [1, 0, 1]
        # The edit taken back out: the engine is whole.
        path = _write(engine)
        assert comparable(engine.analyze_file(path, CHECKS, reuse=True)) == comparable(before)
