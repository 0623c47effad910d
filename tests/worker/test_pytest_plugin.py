"""The pytest plugin (dynamo_lens/pytest_plugin.py) through pytester, in a pytest process of its
own as a project runs it: real compiles (backend "eager"), torch's own trace read per test,
with and without pytest-xdist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from dynamo_lens.report import baseline

MODEL = """\
import torch


def helper(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


@torch.compile(backend="eager")
def breaks(x):
    y = x * 2
    return helper(y)


@torch.compile(backend="eager")
def scaled(x, n):
    return x * n


@torch.compile(backend="eager")
def two_breaks(x):
    a = x.sum().item()
    b = (x * 2).max().item()
    return x * a * b


@torch.compile(backend="eager")
def whole(x):
    return torch.relu(x) + 1
"""

TESTS = """\
import pytest
import torch

from model import breaks, scaled, two_breaks, whole


def test_break():
    assert breaks(torch.ones(3)).shape == (3,)


def test_recompiles():
    for n in (2, 3, 4):
        scaled(torch.ones(3), n)


@pytest.mark.compile_clean
def test_marked_but_breaks():
    two_breaks(torch.ones(4))


@pytest.mark.compile_clean
def test_marked_and_whole():
    whole(torch.ones(5))
"""

# One more break, in a test of its own: the only new finding against a baseline of the above.
NEW_BREAK = """\
import torch


@torch.compile(backend="eager")
def printing(x):
    print("value", x)
    return x + 1


def test_new_break():
    printing(torch.ones(2))
"""

# The plugin's section: up to the next section or pytest's last line ("3 passed in 6.1s").
SUMMARY = re.compile(r"^=+ dynamo-lens =+$(.*?)(?=^=+ |^\d+ \w+.* in [\d.]+s)", re.S | re.M)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(model=MODEL, test_model=TESTS)
    # pytester runs in a fresh folder with no ini: the plugin's root is that folder.
    pytester.makeini("[pytest]\n")
    return pytester


def _run(p: pytest.Pytester, *args: str) -> tuple[int, str]:
    result = p.runpytest_subprocess("-p", "no:cacheprovider", "-q", *args)
    return int(result.ret), result.stdout.str() + result.stderr.str()


def _summary(out: str) -> list[str]:
    m = SUMMARY.search(out)
    assert m, out
    return [ln for ln in m.group(1).strip().splitlines()]


def test_findings_per_test_costliest_first_and_the_session_fails_without_a_baseline(
    project: pytest.Pytester,
) -> None:
    rc, out = _run(project, "--dynamo-lens")
    assert rc == 1, out
    lines = _summary(out)
    findings = [ln for ln in lines if not ln.startswith(("    caused by", "dynamo-lens:"))]
    # Warnings (breaks) before information (recompiles).
    severities = [ln.split(": ")[1] for ln in findings]
    assert severities == sorted(severities, key=["warning", "information"].index), lines
    branch = lines.index(next(ln for ln in lines if ln.startswith("model.py:5: warning:")))
    assert "data-dependent branching" in lines[branch]
    assert lines[branch + 1].startswith("    caused by test_model.py::test_break")
    # Where torch places the recompile differs by version (2.8: the decorator; 2.13: the body).
    recompile = next(i for i, ln in enumerate(lines) if "information: Recompile" in ln)
    assert re.match(r"model\.py:1[678]: ", lines[recompile]), lines
    assert "`n`" in lines[recompile] and lines[recompile + 1] == (
        "    caused by test_model.py::test_recompiles"
    )
    assert lines[-1].startswith("dynamo-lens: ") and "(no baseline)" in lines[-1]
    # compile_clean lists both of its function's breaks (fullgraph=True would stop at the
    # first); the marked test that compiles whole passes.
    failed = out[out.index("_ test_marked_but_breaks _") :]
    listed = re.findall(r"^  model\.py:(\d+): warning: Graph break", failed, re.M)
    assert listed[:2] == ["23", "24"], failed
    assert "test_marked_and_whole" not in out.split("short test summary info")[-1]
    # The trace we record is ours alone: not in the failing test's captured logs (pytest 9
    # attaches its capture to torch's non-propagating trace logger).
    assert "torch.__trace" not in out


def test_a_baseline_then_only_the_new_break_fails_the_session(
    project: pytest.Pytester,
) -> None:
    base = project.path / "baseline.json"
    rc, out = _run(project, "--dynamo-lens-write-baseline", str(base), "-m", "not compile_clean")
    assert rc == 0 and f"wrote the baseline {base}" in out, out
    assert json.loads(base.read_text())["findings"]

    project.makepyfile(test_new=NEW_BREAK)
    rc, out = _run(project, "--dynamo-lens-baseline", str(base), "-m", "not compile_clean")
    # Every test passed: the session fails because of the new break alone.
    assert rc == 1 and "3 passed" in out, out
    new = [ln for ln in _summary(out) if ln.endswith("(new)")]
    assert len(new) == 1 and new[0].startswith("test_new.py:6: warning: Graph break"), out
    assert "1 finding(s) at warning or above not in the baseline" in out


def test_under_xdist_the_workers_findings_are_gathered_and_gated(
    project: pytest.Pytester,
) -> None:
    base = project.path / "baseline.json"
    rc, out = _run(project, "-n", "2", "--dynamo-lens-write-baseline", str(base))
    # The two compile_clean tests run under xdist too; one of them fails on its breaks.
    assert rc == 1 and "1 failed, 3 passed" in out, out
    entries = json.loads(base.read_text())["findings"]
    assert {e["path"] for e in entries} == {"model.py"}
    project.makepyfile(test_new=NEW_BREAK)
    rc, out = _run(
        project, "-n", "2", "--dynamo-lens-baseline", str(base), "-m", "not compile_clean"
    )
    lines = _summary(out)
    assert rc == 1 and [ln for ln in lines if ln.endswith("(new)")] == [
        next(ln for ln in lines if ln.startswith("test_new.py:6:"))
    ], out
    # Findings from tests on both workers: one site each.
    assert any(ln.startswith("    caused by test_model.py::test_break") for ln in lines)
    assert any(ln.startswith("    caused by test_new.py::test_new_break") for ln in lines)


def test_a_bad_baseline_is_a_usage_error_and_nothing_runs(project: pytest.Pytester) -> None:
    (project.path / "broken.json").write_text("{")
    rc, out = _run(project, "--dynamo-lens-baseline", "broken.json")
    assert rc == pytest.ExitCode.USAGE_ERROR and "is not JSON" in out, out
    assert "passed" not in out


def test_the_ci_examples_pytest_gate_command_is_accepted(pytester: pytest.Pytester) -> None:
    doc = yaml.safe_load((REPO / "docs" / "ci" / "github-actions.yml").read_text())
    runs = [str(s.get("run", "")) for job in doc["jobs"].values() for s in job["steps"]]
    (line,) = [ln for r in runs for ln in r.splitlines() if ln.startswith("pytest ")]
    baseline.write(pytester.path / ".dynamo-lens-pytest-baseline.json", [], pytester.path)
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess(*line.split()[1:], "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert "torch reported no graph break or recompile in these tests" in result.stdout.str()


def test_pytester_runs_the_installed_plugin() -> None:
    # The entry point is what registers it; the package's metadata must name it.
    from importlib.metadata import entry_points

    assert "dynamo_lens.pytest_plugin" in {e.value for e in entry_points(group="pytest11")}
    assert Path(REPO / "daemon" / "dynamo_lens" / "pytest_plugin.py").is_file()


FIRST_FIXTURE = """\
import logging

import pytest
import torch
from torch._logging import _internal


@pytest.fixture(scope="module")
def compiled():
    @torch.compile(backend="eager")
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    f(torch.ones(2))
    return f


def test_first(compiled):
    pass


def test_users_own_trace_handler_still_gets_records():
    got = []

    class Keep(logging.Handler):
        def emit(self, record):
            got.append(record)

    h = Keep()
    _internal.trace_log.addHandler(h)
    try:
        torch.compile(lambda x: x * 3, backend="eager")(torch.ones(3))
    finally:
        _internal.trace_log.removeHandler(h)
    assert got
"""


def test_a_fixture_of_the_first_test_and_a_users_own_handler(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_first=FIRST_FIXTURE)
    pytester.makeini("[pytest]\n")
    rc, out = _run(pytester, "--dynamo-lens")
    assert rc == 1 and "2 passed" in out, out
    lines = _summary(out)
    i = next(i for i, ln in enumerate(lines) if "data-dependent branching" in ln)
    assert lines[i + 1].startswith("    caused by test_first.py::test_first"), lines


def test_a_session_that_stops_early_writes_no_baseline(project: pytest.Pytester) -> None:
    base = project.path / "baseline.json"
    rc, out = _run(project, "-x", "--dynamo-lens-write-baseline", str(base))
    assert rc == 1 and "did not write the baseline" in out and not base.exists(), out
    rc, out = _run(project, "--dynamo-lens-write-baseline", "missing/b.json")
    assert rc == pytest.ExitCode.USAGE_ERROR and "no such folder missing" in out, out
    assert "passed" not in out
