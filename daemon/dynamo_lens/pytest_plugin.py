"""The pytest plugin (entry point ``pytest11``): ``pytest --dynamo-lens`` records torch's
structured trace inside the test process, reads it after each test as ``dynamo-lens trace``
reads a run's, and reports the graph breaks and recompiles each test caused, costliest first.

- The session fails when a finding at warning or above is not in ``--dynamo-lens-baseline
  FILE`` (with no baseline, every such finding is new); ``--dynamo-lens-write-baseline FILE``
  writes one instead.
- ``@pytest.mark.compile_clean`` fails its test on any break or recompile in what it ran, and
  lists them all (``fullgraph=True`` stops at the first), with or without ``--dynamo-lens``.
- Under pytest-xdist each worker records its own tests; the controller gathers, gates and
  reports.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .findings import Finding, Kind, from_wire, to_wire
from .report.baseline import BaselineError, Known, failing, mark, read, unwritable, write
from .report.fingerprint import assign, relative

_WORKER_KEY = "dynamo_lens_findings"
# Who caused what ran outside every test's protocol.
BEFORE = "(collection and session setup)"
AFTER = "(session teardown)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynamo-lens", "torch.compile graph breaks and recompiles")
    group.addoption(
        "--dynamo-lens",
        action="store_true",
        help="record torch's structured trace and report the breaks and recompiles each test "
        "causes; fail on those at warning or above that are not in the baseline",
    )
    group.addoption(
        "--dynamo-lens-baseline",
        metavar="FILE",
        default=None,
        help="accepted findings (dynamo-lens check --write-baseline writes the same format)",
    )
    group.addoption(
        "--dynamo-lens-write-baseline",
        metavar="FILE",
        default=None,
        help="write this session's findings as the baseline; the session does not fail on them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "compile_clean: fail this test on any graph break or recompile torch reports in what "
        "it ran (all of them are listed)",
    )
    config.pluginmanager.register(Gate(config), "dynamo-lens-gate")
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Controller(config), "dynamo-lens-xdist")


class _Segments:
    """torch's structured trace of this process in one file, taken a test at a time. Each
    piece read starts with every interned string seen before it (``{"str": ...}`` records
    come once per file name, and a later piece's stacks refer to them)."""

    def __init__(self) -> None:
        from .worker import tracefile

        self.dir = Path(tempfile.mkdtemp(prefix="dynamo-lens-pytest-"))
        self.path = self.dir / "trace.log"
        self.tap = tracefile.start(self.path, _captures)
        self.strings: list[str] = []

    def take(self) -> str:
        chunk = self.tap.drain()
        if not chunk.strip():
            return ""
        text = "".join(self.strings) + chunk
        self.strings += [ln + "\n" for ln in chunk.splitlines() if '] {"str": [' in ln]
        return text

    def close(self) -> None:
        from .worker import tracefile

        tracefile.stop(self.tap)
        shutil.rmtree(self.dir, ignore_errors=True)


class Gate:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.root = config.rootpath
        self.enabled = bool(
            config.getoption("dynamo_lens") or config.getoption("dynamo_lens_write_baseline")
        )
        self.segments: _Segments | None = None
        self.found: list[tuple[str, Finding]] = []  # (nodeid, finding), in test order
        self.known: Known | None = None
        self.outcome = ""
        baseline = config.getoption("dynamo_lens_baseline")
        if baseline and config.getoption("dynamo_lens_write_baseline"):
            raise pytest.UsageError(
                "dynamo-lens: --dynamo-lens-baseline and --dynamo-lens-write-baseline together: "
                "check against one, or write one"
            )
        if baseline:
            self.enabled = True
            try:
                self.known = read(Path(baseline))
            except BaselineError as exc:
                raise pytest.UsageError(f"dynamo-lens: {exc}") from None
        self.torch = importlib.util.find_spec("torch") is not None
        if self.enabled and not self.torch:
            raise pytest.UsageError(
                f"dynamo-lens: torch is not installed in this interpreter ({sys.executable})"
            )
        written = config.getoption("dynamo_lens_write_baseline")
        if written and (problem := unwritable(Path(written))):
            raise pytest.UsageError(f"dynamo-lens: cannot write the baseline {written}: {problem}")
        # An xdist controller runs no test: its workers record.
        controller = getattr(config.option, "dist", "no") != "no" and not hasattr(
            config, "workerinput"
        )
        self.recording = self.enabled and not controller
        if self.recording:
            # From now on: a compile while tests are collected (a module-level one) counts too.
            self._tap()

    def _tap(self) -> _Segments:
        if self.segments is None:
            self.segments = _Segments()
        else:
            self.segments.tap.revive()
        return self.segments

    def _read(self, text: str, nodeid: str) -> list[Finding]:
        if not text or self.segments is None:
            return []
        from .runs.command import trace_results

        piece = self.segments.dir / "piece.log"
        piece.write_text(text, encoding="utf-8", errors="surrogateescape")
        # The test is said beside each finding ("caused by"), not in its note.
        run = trace_results([piece], self.root, [], "pytest")
        found = [f for r in run.results for f in r.all_findings()]
        self.found += [(nodeid, f) for f in found]
        return found

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: Any
    ) -> Generator[None, Any, Any]:
        if not self.recording:
            return (yield)
        segments = self._tap()
        # Collection, and session fixtures set up outside any test's protocol.
        self._read(segments.take(), BEFORE)
        try:
            return (yield)
        finally:
            # Setup, call and teardown (fixtures the test finishes included) are the test's.
            self._read(segments.take(), item.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        clean = item.get_closest_marker("compile_clean") is not None
        # Without torch nothing compiles: a compile_clean test is clean.
        if not clean or not self.torch:
            return (yield)
        segments = self._tap()
        # What ran in this test's setup is the test's too, but only its call is held to
        # compile_clean.
        self._read(segments.take(), item.nodeid)
        try:
            result = yield
        finally:
            found = self._read(segments.take(), item.nodeid)
        bad = [f for f in found if f.is_break or f.kind in (Kind.RECOMPILE, Kind.FALLBACK)]
        if bad:
            lines = [_line(f, self.root) for f in bad]
            pytest.fail(
                f"compile_clean: torch reported {len(bad)} graph break(s) or recompile(s):\n"
                + "\n".join(f"  {ln}" for ln in lines),
                pytrace=False,
            )
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.segments is not None:
            self._read(self.segments.take(), AFTER)
            self.segments.close()
            self.segments = None
        if hasattr(self.config, "workerinput"):
            # An xdist worker: the controller gates and reports.
            self.config.workeroutput[_WORKER_KEY] = json.dumps(  # type: ignore[attr-defined]
                [[nodeid, to_wire(f)] for nodeid, f in self.found]
            )
            return
        if not self.enabled:
            return
        sites = self.sites()
        written = self.config.getoption("dynamo_lens_write_baseline")
        stopped = (
            session.shouldstop
            or session.shouldfail
            or exitstatus
            in (
                pytest.ExitCode.INTERRUPTED,
                pytest.ExitCode.INTERNAL_ERROR,
                pytest.ExitCode.USAGE_ERROR,
            )
        )
        if written and stopped:
            # Tests that never ran found nothing: a baseline from them would accept too little,
            # and overwrite a whole one (``run`` writes none for a failed command either).
            self.outcome = (
                f"dynamo-lens: did not write the baseline {written}: the session stopped before "
                "every test ran"
            )
            return
        if written:
            try:
                n = write(Path(written), sites, self.root)
            except BaselineError as exc:
                self.outcome = f"dynamo-lens: {exc}"
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
                return
            self.outcome = f"dynamo-lens: wrote the baseline {written}: {n} finding(s)"
            return
        mark(sites, self.known or {}, self.root)
        new = failing(sites)
        if new:
            self.outcome = (
                f"dynamo-lens: {len(new)} finding(s) at warning or above not in the baseline"
                if self.known is not None
                else f"dynamo-lens: {len(new)} finding(s) at warning or above (no baseline)"
            )
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif sites:
            self.outcome = "dynamo-lens: no new finding at warning or above"

    def sites(self) -> list[Finding]:
        """One finding per site over the session (the same break hit by several tests is one
        finding, at its highest severity), with the tests that caused it in ``self.tests``."""
        by_site: dict[tuple[str, ...], Finding] = {}
        hits: dict[tuple[str, ...], int] = {}
        self.tests: dict[int, list[str]] = {}
        for nodeid, f in self.found:
            # The message too: breaks deep in code outside the rootdir are placed on the one
            # line that called into it, and are still different breaks.
            key = (
                f.kind.value,
                f.path,
                str(f.line),
                f.gb_id or "",
                str(f.data.get("guard_kind", "")),
                str(f.data.get("variable", "")),
                f.message,
            )
            hits[key] = hits.get(key, 0) + _hits(f)
            have = by_site.get(key)
            if have is None or f.severity.rank > have.severity.rank:
                by_site[key] = f
                self.tests[id(f)] = self.tests.pop(id(have), []) if have else []
            site = by_site[key]
            if nodeid not in self.tests[id(site)]:
                self.tests[id(site)].append(nodeid)
        self.hits = {id(f): hits[key] for key, f in by_site.items()}
        out = list(by_site.values())
        assign(out, self.root)
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput") or not self.enabled:
            return
        sites = [f for f in self.sites() if f.kind is not Kind.STATIC_HINT]
        tr = terminalreporter
        tr.section("dynamo-lens")
        if not sites:
            tr.write_line("torch reported no graph break or recompile in these tests")
        # Costliest first: the most severe, then the most often hit.
        order = sorted(
            sites, key=lambda f: (-f.severity.rank, -self.hits.get(id(f), 0), f.path, f.line)
        )
        for f in order:
            tests = self.tests.get(id(f), [])
            tr.write_line(_line(f, self.root) + _state(f))
            shown = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
            n = self.hits.get(id(f), 0)
            tr.write_line(f"    caused by {shown}" + (f" ({n}× in the session)" if n > 1 else ""))
        if self.outcome:
            tr.write_line(self.outcome)


def _captures(handler: logging.Handler) -> bool:
    """pytest's own log capture (its handlers, attached to torch's trace logger too)."""
    return type(handler).__module__ == "_pytest.logging"


def _hits(f: Finding) -> int:
    """How often one test hit the site (a finding is at least one hit)."""
    return max(1, int(f.data.get("count", 0) or 0) + int(f.data.get("recompiles", 0) or 0))


def _state(f: Finding) -> str:
    return {"known": " (known: in the baseline)", "new": " (new)"}.get(f.baseline, "")


def _line(f: Finding, root: Path) -> str:
    code = f" [{f.gb_id}]" if f.gb_id else ""
    return f"{relative(f.path, root)}:{f.line}: {f.severity.value}: {f.text}{code}"


class _Controller:
    """Under xdist: each worker's findings, gathered as the worker ends."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        gate = self.config.pluginmanager.get_plugin("dynamo-lens-gate")
        raw = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if gate is None or not raw:
            return
        for nodeid, data in json.loads(raw):
            gate.found.append((nodeid, from_wire(data, Finding)))
