"""`python -m dynamo_lens serve` with proposed fixes emulated by patching, so they can be measured
side by side with the stock daemon without editing it. ``DL_BENCH_PATCHES`` (comma-separated)
picks them; whichever ``dynamo_lens`` is first on the path is patched (the working tree, or a
``git archive HEAD`` export put on PYTHONPATH by the bench).

open-now        ``Scheduler.submit(..., now=True)`` for reason ``"open"``: a didOpen is analysed
                (or served from the cache) without the 0.3 s debounce. Real fix: in
                ``AnalysisService.open`` (service.py) pass ``now=True`` through ``_request`` to
                ``Scheduler.submit`` (scheduler.py), or publish a cache hit synchronously.
save-skips-watcher
                ``AnalysisService.save`` remembers the sha256 of the bytes on disk when the didSave
                arrives; ``AnalysisService.disk_changed`` ignores a watcher event whose file still
                has exactly those bytes (the save already requested that content and its
                dependants). A real outside change (git checkout, codegen), or an editor reload
                that sent only didChange, has other bytes and is still re-checked.
"""

import hashlib
import os
import sys
from pathlib import Path

from dynamo_lens import scheduler, service

PATCHES = {p.strip() for p in os.environ.get("DL_BENCH_PATCHES", "").split(",") if p.strip()}

if "open-now" in PATCHES:
    _orig_submit = scheduler.Scheduler.submit

    def _submit(self, path, version, checks, reason, *, now=False):  # type: ignore[no-untyped-def]
        return _orig_submit(self, path, version, checks, reason, now=now or reason == "open")

    scheduler.Scheduler.submit = _submit  # type: ignore[method-assign]

if "save-skips-watcher" in PATCHES:
    _saved: dict[str, str] = {}
    _orig_save = service.AnalysisService.save
    _orig_disk = service.AnalysisService.disk_changed

    def _digest(path: str) -> str | None:
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return None

    def _save(self, path, text, version):  # type: ignore[no-untyped-def]
        h = _digest(path)
        if h is not None:
            _saved[os.path.realpath(path)] = h
        return _orig_save(self, path, text, version)

    def _disk_changed(self, path):  # type: ignore[no-untyped-def]
        h = _digest(path)
        if h is not None and _saved.get(os.path.realpath(path)) == h:
            return None
        return _orig_disk(self, path)

    service.AnalysisService.save = _save  # type: ignore[method-assign]
    service.AnalysisService.disk_changed = _disk_changed  # type: ignore[method-assign]

unknown = PATCHES - {"open-now", "save-skips-watcher"}
if unknown:
    raise SystemExit(f"unknown DL_BENCH_PATCHES: {sorted(unknown)}")

from dynamo_lens.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:] or ["serve"]))
