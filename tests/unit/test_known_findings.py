"""Known findings in the editor (dynamoLens.knownFindings): what a file shows marked against the
workspace's baseline, hidden or shown as hints, a broken baseline never in the way. No torch,
no daemon process: the service's parts and the LSP edge's translation."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from dynamo_lens.config import Config, apply
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.report import baseline
from dynamo_lens.server.cache import ResultCache
from dynamo_lens.server.context import Context
from dynamo_lens.server.documents import Documents
from dynamo_lens.server.known import KnownFindings
from dynamo_lens.server.lsp.convert import diagnostic
from dynamo_lens.server.service import AnalysisService
from dynamo_lens.server.watcher import Watcher
from lsprotocol import types

SOURCE = "def f(x):\n    return x.item()\n\n\ndef g(x):\n    return x.tolist()\n"


def _break(path: Path, line: int) -> Finding:
    return Finding(
        Kind.GRAPH_BREAK, Severity.WARNING, str(path), line, 5, line, 20, "Graph break", gb_id="GB1"
    )


def _workspace(tmp_path: Path) -> tuple[Path, Finding, Finding]:
    """m.py with a break in f (in the baseline) and one in g (new)."""
    root = Path(os.path.realpath(tmp_path))
    src = root / "m.py"
    src.write_text(SOURCE)
    accepted, new = _break(src, 2), _break(src, 6)
    baseline.write(root / "base.json", [accepted], root)
    return root, accepted, new


def _known(root: Path, **settings: str) -> tuple[KnownFindings, list[str]]:
    warned: list[str] = []
    cfg = dataclasses.replace(Config(), baseline="base.json", **settings)
    docs = Documents(lambda _path, _shown: None)
    ctx = Context(root, cfg, True, docs, ResultCache(root / ".cache", root), lambda _m: None)
    return KnownFindings(ctx, warned.append), warned


def test_hint_marks_each_finding_and_the_edge_shows_the_known_ones_as_hints(
    tmp_path: Path,
) -> None:
    root, accepted, new = _workspace(tmp_path)
    known, warned = _known(root, known_findings="hint")
    shown = known.shown([accepted, new])
    assert [(f.line, f.baseline) for f in shown] == [(2, "known"), (6, "new")]
    assert accepted.baseline == new.baseline == ""  # the stored findings are never changed
    hint, warning = (diagnostic(f) for f in shown)
    assert hint.severity == types.DiagnosticSeverity.Hint
    assert hint.message.startswith("Graph break (known: in the baseline)")
    assert isinstance(hint.data, dict) and hint.data["baseline"] == "known"
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert "known" not in warning.message
    assert isinstance(warning.data, dict) and warning.data["baseline"] == "new"
    # Unmarked (no baseline, or "same"): as before, nothing added.
    plain = diagnostic(accepted)
    assert plain.severity == types.DiagnosticSeverity.Warning
    assert isinstance(plain.data, dict) and "baseline" not in plain.data
    assert warned == []


def test_hide_drops_the_known_ones_and_same_reads_nothing(tmp_path: Path) -> None:
    root, accepted, new = _workspace(tmp_path)
    hide, _ = _known(root, known_findings="hide")
    assert [(f.line, f.baseline) for f in hide.shown([accepted, new])] == [(6, "new")]
    (root / "base.json").write_text("not json")
    same, warned = _known(root)
    assert same.shown([accepted, new]) == [accepted, new]
    assert warned == []  # the default never reads the baseline, broken or not


def test_a_known_finding_stays_known_when_its_lines_move(tmp_path: Path) -> None:
    root, _, _ = _workspace(tmp_path)
    (root / "m.py").write_text("import os\n\n\n" + SOURCE)
    known, _ = _known(root, known_findings="hint")
    moved = [_break(root / "m.py", 5), _break(root / "m.py", 9)]
    assert [f.baseline for f in known.shown(moved)] == ["known", "new"]


def test_a_broken_baseline_is_reported_once_and_shows_every_finding(tmp_path: Path) -> None:
    root, accepted, new = _workspace(tmp_path)
    good = (root / "base.json").read_text()
    (root / "base.json").write_text("{not json")
    known, warned = _known(root, known_findings="hide")
    for _ in range(3):
        assert known.shown([accepted, new]) == [accepted, new]
    assert len(warned) == 1 and "is not JSON" in warned[0] and "base.json" in warned[0]
    # Mended: read again (its size and mtime changed), and the known one is hidden.
    (root / "base.json").write_text(good)
    assert [f.line for f in known.shown([accepted, new])] == [6]
    # Gone, then not a file: each said once.
    (root / "base.json").unlink()
    assert known.shown([accepted, new]) == [accepted, new]
    assert known.shown([accepted, new]) == [accepted, new]
    assert len(warned) == 2 and "no baseline at" in warned[1]
    (root / "base.json").mkdir()
    assert known.shown([accepted, new]) == [accepted, new]
    assert len(warned) == 3 and "not a regular file" in warned[2]


def test_the_setting_is_validated_and_applies_without_a_restart() -> None:
    cfg, problems = apply(Config(), {"knownFindings": "dim"}, "settings")
    assert cfg.known_findings == "same" and "knownFindings" in problems[0]
    cfg, problems = apply(Config(), {"knownFindings": "hint"}, "settings")
    assert cfg.known_findings == "hint" and problems == []
    assert Config().same_but_live(cfg)
    assert Config().same_but_live(dataclasses.replace(Config(), baseline="other.json"))


def test_the_service_shows_every_file_again_when_the_setting_or_the_baseline_changes(
    tmp_path: Path,
) -> None:
    root, accepted, new = _workspace(tmp_path)
    published: list[list[Finding]] = []
    cfg = dataclasses.replace(Config(), baseline="base.json", known_findings="hint")
    svc = AnalysisService(
        root,
        cfg,
        trusted=True,
        publish=lambda _path, shown: published.append(shown()[0]),
        status=lambda _s: None,
        log=lambda _m: None,
        cache_dir=root / ".cache",
    )
    try:
        doc = svc.docs.get(str(root / "m.py"))
        doc.findings = [accepted, new]
        svc.docs.publish(doc)
        assert [f.baseline for f in published[-1]] == ["known", "new"]
        svc.apply_live(dataclasses.replace(cfg, known_findings="hide"))
        assert [f.line for f in published[-1]] == [6]
        # The baseline written again (now accepting both), as the watcher reports it.
        baseline.write(root / "base.json", [accepted, new], root)
        watcher = Watcher(root, cfg.excludes, svc.disk_changed, also=svc.known.is_baseline)
        assert watcher.wanted(str(root / "base.json"))
        assert not watcher.wanted(str(root / "other.json"))
        n = len(published)
        svc.disk_changed(str(root / "base.json"))
        assert len(published) == n + 1 and published[-1] == []
        assert svc.analyses.scheduler.count() == 0  # a baseline is never analysed
    finally:
        svc.close()
