"""Findings from real runs: `dynamo-lens run -- CMD` and `dynamo-lens trace DIR`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from support.tracerun import record_trace

SCRIPT = """\
import torch


def step(x, n):
    y = x * 2
    if y.sum() > 0:  # data-dependent: a break
        y = y + 1
    return y


compiled = torch.compile(step, backend="eager")
for n in (2, 3):
    compiled(torch.ones(8), n)
print("the script ran")
"""


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dynamo_lens", *args],
        cwd=str(cwd),
        env={**os.environ, "PYTHONPATH": str(REPO / "daemon")},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _breaks(doc: dict[str, object]) -> list[tuple[str, int, str | None]]:
    return sorted(
        (Path(f["path"]).name, f["line"], f["gb_id"])  # type: ignore[index]
        for f in doc["findings"]  # type: ignore[union-attr]
        if f["kind"] == "graph_break"  # type: ignore[index]
    )


def test_run_reports_the_scripts_break_with_its_provenance(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    p = _cli("run", "--format", "json", "--", sys.executable, "train.py", cwd=tmp_path)
    assert "the script ran" in p.stdout  # the command's output passes through
    doc = json.loads(p.stdout[p.stdout.index("{") :])
    assert _breaks(doc) == [("train.py", 6, "GB0170")]
    (f,) = [f for f in doc["findings"] if f["kind"] == "graph_break"]
    assert f["message"].startswith("Graph break: data-dependent branching")
    assert p.returncode == 1  # findings at warning: check's exit status


def test_trace_of_a_plain_torch_trace_run_equals_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    trace = tmp_path / "trace"
    record_trace(tmp_path, "train.py", trace)
    p = _cli("trace", str(trace), "--format", "json", cwd=tmp_path)
    doc = json.loads(p.stdout)
    assert _breaks(doc) == [("train.py", 6, "GB0170")]


def test_a_trace_recorded_under_another_root_maps_to_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(SCRIPT)
    trace = tmp_path / "trace"
    record_trace(ws, "train.py", trace)
    remote = tmp_path / "copied"
    remote.mkdir()
    for log in trace.iterdir():  # as if recorded on a cluster under /cluster/job/src
        (remote / log.name).write_text(log.read_text().replace(str(ws), "/cluster/job/src"))
    mapped = json.loads(
        _cli(
            "trace", str(remote), "--format", "json", "--path-map", f"/cluster/job/src={ws}", cwd=ws
        ).stdout
    )
    by_suffix = json.loads(_cli("trace", str(remote), "--format", "json", cwd=ws).stdout)
    assert _breaks(mapped) == _breaks(by_suffix) == [("train.py", 6, "GB0170")]


def test_an_empty_or_corrupt_trace_is_reported_not_fatal(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "bad.log").write_text('V1203 01:02:03.000 1 x.py:1] {"artifact": {\n')
    p = _cli("trace", str(empty), cwd=tmp_path)
    assert p.returncode == 0 and "skipped 1 unreadable trace line" in p.stderr


DDP = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()


def step(x):
    y = x * 2
    if rank == 1:
        print("rank one logs", y.sum().item())  # only rank 1 breaks here
    return y + 1


compiled = torch.compile(step, backend="eager")
compiled(torch.ones(4))
dist.barrier()
dist.destroy_process_group()
"""


def test_a_two_rank_torchrun_attributes_a_divergent_break_to_its_rank(tmp_path: Path) -> None:
    (tmp_path / "ddp.py").write_text(DDP)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "ddp.py",
    ]
    p = _cli("run", "--format", "json", "--", *cmd, cwd=tmp_path)
    doc = json.loads(p.stdout[p.stdout.index('{\n  "version"') :])
    breaks = [f for f in doc["findings"] if f["kind"] == "graph_break"]
    assert breaks and {f["line"] for f in breaks} == {11}
    assert all("rank 1 only" in f["note"] for f in breaks), [f["note"] for f in breaks]


def test_the_text_report_ends_with_the_distinct_break_summary(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    p = _cli("run", "--", sys.executable, "train.py", cwd=tmp_path)
    table = p.stdout[p.stdout.index("Distinct graph breaks (1)") :]
    assert "train.py:6 GB0170 data-dependent branching" in table
    assert "compile time: Dynamo" in table


LIMIT = """\
import torch


def scale(x, n):
    for _ in range(n):  # each new n is a new graph
        x = x * 1.01
    return x


compiled = torch.compile(scale, backend="eager")
for n in range(1, 14):
    compiled(torch.ones(4), n)
"""


def test_the_recompile_limit_hit_in_a_run_is_reported(tmp_path: Path) -> None:
    (tmp_path / "limit.py").write_text(LIMIT)
    p = _cli("run", "--format", "json", "--", sys.executable, "limit.py", cwd=tmp_path)
    doc = json.loads(p.stdout[p.stdout.index("{") :])
    recs = [f for f in doc["findings"] if f["kind"] == "recompile"]
    assert recs and any(f["data"].get("limit_hit") for f in recs), recs
    hit = next(f for f in recs if f["data"].get("limit_hit"))
    assert hit["severity"] == "warning" and "recompile limit" in hit["message"]
    assert hit["line"] == 5


MODEL = """\
import torch


def step(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: a break
        y = y + 1
    print("stepped")  # a builtin torch cannot trace: a break
    return torch.relu(y)


def compile_example():
    return step, (torch.ones(8),)
"""

TRAIN_STEP = """\
import torch

from model import step

if __name__ == "__main__":
    torch.compile(step, backend="eager")(torch.ones(8))
"""


def _sites(doc: dict[str, object], name: str) -> list[tuple[str, int, str, str | None, str]]:
    return sorted(
        (Path(f["path"]).name, f["line"], f["kind"], f["gb_id"], f["message"])  # type: ignore[index]
        for f in doc["findings"]  # type: ignore[union-attr]
        if Path(f["path"]).name == name  # type: ignore[index]
    )


def test_a_scripts_run_finds_what_check_finds_for_the_same_code_line_by_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(TRAIN_STEP)
    run = _cli("run", "--format", "json", "--", sys.executable, "train.py", cwd=tmp_path)
    check = _cli(
        "check", "model.py", "--format", "json", "--checks", "breaks", "--backend", "eager",
        cwd=tmp_path,
    )  # fmt: skip
    ran = _sites(json.loads(run.stdout[run.stdout.index("{") :]), "model.py")
    checked = _sites(json.loads(check.stdout), "model.py")
    assert [s[:4] for s in ran] == [
        ("model.py", 6, "graph_break", "GB0170"),
        ("model.py", 8, "graph_break", "GB0059"),
    ]
    assert ran == checked


TEST_MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        if x.mean() > 0:  # data-dependent: a break
            x = x * 2
        return x.relu()


def test_compiled_net():
    net = torch.compile(Net(), backend="eager")
    assert net(torch.ones(3)).shape == (3,)
"""


def test_a_pytest_run_reports_the_break_in_the_model_it_tested(tmp_path: Path) -> None:
    (tmp_path / "test_model.py").write_text(TEST_MODEL)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py"]
    p = _cli("run", "--format", "json", "--", *cmd, cwd=tmp_path)
    assert "1 passed" in p.stdout  # pytest's own output passes through
    doc = json.loads(p.stdout[p.stdout.index('{\n  "version"') :])
    assert _breaks(doc) == [("test_model.py", 6, "GB0170")]
    (target,) = doc["targets"]
    assert target["kind"] == "run" and target["target"] == "test_model.py::forward@5"
    assert target["break_count"] == 1 and target["environment"]["compile_seconds"] > 0
