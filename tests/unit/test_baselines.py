"""Baselines and ``diff`` (report/baseline.py, report/diff.py, the CLI's ``--baseline``,
``--write-baseline`` and ``diff``), on static findings: no torch, no user code. The same gate
over torch's own findings is in tests/worker/test_gate.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO
from dynamo_lens.cli import main
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.report import baseline, diff

LOSSES = "models/losses.py"
# One more likely break, inside a target's function.
NEW_AFTER = "    uniform = -logp.mean(dim=-1)\n"
NEW_LINE = "    peak = nll.max().item()\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    out = tmp_path / "ws"
    shutil.copytree(REPO / "example_workspace", out, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def _check(
    ws: Path, capsys: pytest.CaptureFixture[str], *extra: str, fmt: str = "json"
) -> tuple[int, dict]:
    rc = main(
        [
            "check",
            str(ws / "models"),
            "--root",
            str(ws),
            "--checks",
            "static",
            "--format",
            fmt,
            *extra,
        ]
    )
    out = capsys.readouterr().out
    return rc, (json.loads(out) if fmt in ("json", "sarif") else {"text": out})


def _insert(path: Path, after: str, text: str) -> None:
    src = path.read_text()
    i = src.index(after) + len(after)
    path.write_text(src[:i] + text + src[i:])


def test_a_baseline_round_trip_marks_everything_known(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ws / "baseline.json"
    rc, doc = _check(ws, capsys, "--write-baseline", str(base))
    assert rc == 0 and doc["findings"]
    written = json.loads(base.read_text())
    entries = written["findings"]
    assert len(entries) == len(doc["findings"])
    # Diff-friendly: relative paths, sorted, and the same bytes when written again.
    assert all(not e["path"].startswith("/") for e in entries)
    assert entries == sorted(
        entries, key=lambda e: (e["path"], e["line"], e["kind"], e["fingerprint"])
    )
    before = base.read_bytes()
    _check(ws, capsys, "--write-baseline", str(base))
    assert base.read_bytes() == before
    rc, doc = _check(ws, capsys, "--baseline", str(base))
    assert rc == 0
    assert {f["baseline"] for f in doc["findings"]} == {"known"}


def test_moved_lines_are_known_and_a_new_finding_is_new(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ws / "baseline.json"
    _check(ws, capsys, "--write-baseline", str(base))
    _, before = _check(ws, capsys)
    # Every file's findings move down: a header comment and blank lines on top of each file.
    for f in (ws / "models").glob("*.py"):
        f.write_text("# moved by a refactor\n\n\n" + f.read_text())
    rc, doc = _check(ws, capsys, "--baseline", str(base))
    assert rc == 0
    assert {f["baseline"] for f in doc["findings"]} == {"known"}
    assert [f["fingerprint"] for f in doc["findings"]] == [
        f["fingerprint"] for f in before["findings"]
    ]
    assert [f["line"] for f in doc["findings"]] == [f["line"] + 3 for f in before["findings"]]
    # One new likely break: exactly one new finding, named at its line.
    _insert(ws / LOSSES, NEW_AFTER, NEW_LINE)
    rc, doc = _check(ws, capsys, "--baseline", str(base))
    new = [f for f in doc["findings"] if f["baseline"] == "new"]
    assert len(new) == 1 and new[0]["path"].endswith(LOSSES), new
    assert "item()" in (ws / LOSSES).read_text().splitlines()[new[0]["line"] - 1]
    # Static hints are information: they do not fail a check, new or not.
    assert rc == 0
    _, text = _check(ws, capsys, "--baseline", str(base), fmt="text")
    assert "(1 new," in text["text"] and "(known: in the baseline)" in text["text"]


def test_sarif_fingerprints_and_baseline_state(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ws / "baseline.json"
    _check(ws, capsys, "--write-baseline", str(base))
    _, before = _check(ws, capsys, fmt="sarif")
    for f in (ws / "models").glob("*.py"):
        f.write_text("\n\n" + f.read_text())
    _, after = _check(ws, capsys, "--baseline", str(base), fmt="sarif")
    fps = lambda d: [r["partialFingerprints"] for r in d["runs"][0]["results"]]  # noqa: E731
    assert fps(before) == fps(after) and all(fps(before))
    assert {r["baselineState"] for r in after["runs"][0]["results"]} == {"unchanged"}
    assert all("baselineState" not in r for r in before["runs"][0]["results"])


def test_the_default_baseline_comes_from_pyproject(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _check(ws, capsys, "--write-baseline", str(ws / "accepted.json"))
    _insert(ws / "pyproject.toml", "[tool.dynamo-lens]\n", 'baseline = "accepted.json"\n')
    _, doc = _check(ws, capsys)
    assert {f["baseline"] for f in doc["findings"]} == {"known"}, doc


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "no baseline at"),
        ("not json", "is not JSON"),
        ('{"version": 99, "findings": []}', "not a dynamo-lens baseline"),
        ('{"version": 1, "findings": [{"path": "a.py"}]}', "without a fingerprint"),
    ],
)
def test_a_bad_baseline_is_a_clear_error_before_any_analysis(
    ws: Path, capsys: pytest.CaptureFixture[str], content: str | None, said: str
) -> None:
    base = ws / "baseline.json"
    if content is not None:
        base.write_text(content)
    rc = main(["check", str(ws / "models"), "--checks", "static", "--baseline", str(base)])
    captured = capsys.readouterr()
    assert rc == 2 and said in captured.err, captured.err
    assert captured.out == ""
    if content is not None:
        assert base.read_text() == content  # never rewritten by reading


def test_an_unwritable_baseline_is_said_before_the_analysis(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        [
            "check",
            str(ws / "models"),
            "--checks",
            "static",
            "--write-baseline",
            str(ws / "no" / "b.json"),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and "cannot write the baseline" in captured.err and captured.out == ""


def _f(fp: str, line: int = 1) -> Finding:
    return Finding(
        Kind.GRAPH_BREAK, Severity.WARNING, "/w/a.py", line, 1, line, 2, "m", fingerprint=fp
    )


def test_compare_matches_by_fingerprint_as_many_times_as_each_occurs() -> None:
    d = diff.compare([_f("a"), _f("b"), _f("b")], [_f("b", 9), _f("c"), _f("a", 5)])
    assert [f.fingerprint for f in d.new] == ["c"]
    assert [f.fingerprint for f in d.gone] == ["b"]
    assert sorted(f.fingerprint for f in d.unchanged) == ["a", "b"]
    assert [f.line for f in d.unchanged if f.fingerprint == "a"] == [5]  # NEW's line


def test_mark_counts_each_baseline_entry_once() -> None:
    items = [_f("a", 1), _f("a", 2)]
    baseline.mark(items, {"a": [Severity.WARNING.rank]}, Path("/w"))
    assert [f.baseline for f in items] == ["known", "new"]
    assert baseline.failing(items) == [items[1]]


def test_diff_of_two_reports(ws: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _, doc = _check(ws, capsys)
    old.write_text(json.dumps(doc))
    _insert(ws / LOSSES, NEW_AFTER, NEW_LINE)
    _, doc = _check(ws, capsys)
    new.write_text(json.dumps(doc))
    assert main(["diff", str(old), str(new), "--workspace", str(ws)]) == 1
    out = capsys.readouterr().out.splitlines()
    line = (ws / LOSSES).read_text().splitlines().index(NEW_LINE.rstrip("\n")) + 1
    assert [ln for ln in out if ln.startswith("new: ")] == [
        f"new: {LOSSES}:{line}: information: static_hint: Likely graph break: Tensor.item() call"
        " [GB0124]"
    ]
    assert out[-1].startswith("1 new, 0 gone, ")
    assert main(["diff", str(new), str(old), "--format", "json"]) == 0
    back = json.loads(capsys.readouterr().out)
    assert len(back["gone"]) == 1 and back["new"] == []
    assert main(["diff", str(old), str(old)]) == 0


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "no such file"),
        ("[1, 2", "neither a JSON report"),
        ('{"a": 1}', "no findings list"),
        ('{"tool": "dynamo-lens", "version": 1, "findings": []}', "is a baseline"),
        ('{"findings": [{"kind": "nonsense"}]}', "not of dynamo-lens' shape"),
    ],
)
def test_diff_of_something_else_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, said: str
) -> None:
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    assert main(["diff", str(bad), str(bad)]) == 2
    assert said in capsys.readouterr().err


def test_a_failed_analysis_is_never_known(tmp_path: Path) -> None:
    err = Finding(Kind.ERROR, Severity.ERROR, str(tmp_path / "a.py"), 1, 1, 1, 2, "raised")
    base = tmp_path / "b.json"
    assert baseline.write(base, [err], tmp_path) == 0
    assign_known = baseline.read(base)
    baseline.mark([err], {err.fingerprint: [3]}, tmp_path)
    assert err.baseline == "new" and assign_known == {}


def test_a_finding_whose_severity_rose_is_new() -> None:
    hint = _f("a")
    baseline.mark([hint], {"a": [Severity.INFORMATION.rank]}, Path("/w"))
    assert hint.baseline == "new"
    baseline.mark([hint], {"a": [Severity.ERROR.rank]}, Path("/w"))
    assert hint.baseline == "known"


def test_a_baseline_is_written_through_a_link_with_the_usual_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    baseline.write(link, [_f("a")], tmp_path)
    assert link.is_symlink() and json.loads(real.read_text())["findings"]
    assert real.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.json"
    baseline.write(fresh, [], tmp_path)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()
    with pytest.raises(baseline.BaselineError, match="not a regular file"):
        baseline.write(tmp_path, [], tmp_path)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + fresh.read_bytes())
    assert baseline.read(bom) == {}


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--baseline", "{ws}/b.json", "--write-baseline", "{ws}/c.json"), "together"),
        (("--write-baseline", "{ws}/r.json", "-o", "{ws}/r.json"), "are one file"),
    ],
)
def test_conflicting_baseline_options_are_refused(
    ws: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], said: str
) -> None:
    args = [a.format(ws=ws) for a in extra]
    assert main(["check", str(ws / "models"), "--checks", "static", *args]) == 2
    captured = capsys.readouterr()
    assert said in captured.err and captured.out == ""
    assert not (ws / "r.json").exists() and not (ws / "c.json").exists()


def test_diff_of_a_folder_without_trace_logs_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["diff", str(tmp_path / "empty"), str(tmp_path / "empty")]) == 2
    assert "no torch trace log" in capsys.readouterr().err


def test_paths_in_two_projects_are_refused_not_half_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("alpha", "beta"):
        (tmp_path / name / "models").mkdir(parents=True)
        (tmp_path / name / "pyproject.toml").write_text("")
        (tmp_path / name / "models" / "m.py").write_text("x = 1\n")
    paths = [str(tmp_path / n / "models" / "m.py") for n in ("alpha", "beta")]
    assert main(["check", *paths, "--checks", "static"]) == 2
    assert "the paths are in 2 projects" in capsys.readouterr().err
    # With a root above them both, one workspace.
    assert main(["check", *paths, "--checks", "static", "--root", str(tmp_path)]) == 0
