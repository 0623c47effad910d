"""Settings: defaults, `[tool.dynamo-lens]` in pyproject.toml, and validation.

A bad value never aborts anything: it is reported as a message and the default is used.
Editor settings (camelCase) and pyproject keys (kebab-case or snake_case) are both accepted.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The naming rule for example functions, everywhere it is applied (worker discovery, the
# engine's pre-filter on raw bytes, static hints, code actions): module-level
# `compile_example` or `compile_example_<suffix>`.
EXAMPLE_NAME = re.compile(r"compile_example(?:_\w+)?")
# A line starts after "\n", "\r\n" or a lone "\r" (Python's tokenizer takes all three), and a
# form feed may open it.
EXAMPLE_DEF = re.compile(
    rb"(?:^|(?<=\r))\f*def\s+" + EXAMPLE_NAME.pattern.encode() + rb"\s*\(", re.M
)


def is_example_name(name: str) -> bool:
    return EXAMPLE_NAME.fullmatch(name) is not None


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

ALL_CHECKS = ("breaks", "recompiles", "equivalence", "timings")
# How the editor shows a finding the baseline accepts: as any other, as a hint, or not at all.
KNOWN_FINDINGS = ("same", "hint", "hide")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".dynamo-lens",
    "site-packages",
)


def _as_str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


# Validators: (ok, the value normalised) for a value from pyproject.toml or the editor.
Check = Callable[[Any], tuple[bool, Any]]


def _checks(value: Any) -> tuple[bool, Any]:
    items = _as_str_list(value)
    if items == ["all"]:
        return True, list(ALL_CHECKS)
    return items is not None and all(i in ALL_CHECKS for i in items), items


def _devices(value: Any) -> tuple[bool, Any]:
    items = _as_str_list(value)
    ok = bool(items) and all(
        d in ("auto", "cpu", "cuda") or (d.startswith("cuda:") and d[5:].isdigit())
        for d in items or []
    )
    return ok, items


def _str_list(value: Any) -> tuple[bool, Any]:
    items = _as_str_list(value)
    return items is not None, items


def _name(value: Any) -> tuple[bool, Any]:
    return isinstance(value, str) and bool(value), value


def _text(value: Any) -> tuple[bool, Any]:
    return isinstance(value, str), value


def _mode(value: Any) -> tuple[bool, Any]:
    return value in MODES, value


def _dynamic(value: Any) -> tuple[bool, Any]:
    if value in (None, "auto"):
        return True, None
    return isinstance(value, bool), value


def _tolerance(value: Any) -> tuple[bool, Any]:
    # None stays expressible: "use the dtype's default".
    if value is None:
        return True, None
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0
    return ok, float(value) if ok else value


def _known(value: Any) -> tuple[bool, Any]:
    return value in KNOWN_FINDINGS, value


def _grads(value: Any) -> tuple[bool, Any]:
    return value in ("auto", "always", "never"), value


def _seconds(value: Any) -> tuple[bool, Any]:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0
    return ok, float(value) if ok else value


def _count(value: Any) -> tuple[bool, Any]:
    return not isinstance(value, bool) and isinstance(value, int) and value > 0, value


def _flag(value: Any) -> tuple[bool, Any]:
    return isinstance(value, bool), value


def _setting(
    default: Any,
    check: Check,
    *,
    alias: str | None = None,
    live: bool = False,
    results: bool = True,
) -> Any:
    """A field of ``Config`` with what belongs to it: its validator, its editor name where
    that is not the plain camelCase of the field (``alias``), whether a change applies to the
    running daemon without a restart (``live``: display only), and whether it changes
    analysis results (``results``: part of the cache key)."""
    meta = {"check": check, "alias": alias, "live": live, "results": results and not live}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Config:
    # "auto" means cpu plus every CUDA device the worker finds.
    devices: list[str] = _setting(["auto"], _devices)
    checks: list[str] = _setting(list(ALL_CHECKS), _checks)
    checks_on_save: list[str] = _setting(
        ["breaks", "recompiles"], _checks, alias="checksOnSave", live=True
    )
    backend: str = _setting("inductor", _name)
    mode: str = _setting("default", _mode)
    # None: torch's default (automatic dynamic shapes after the first recompile).
    dynamic: bool | None = _setting(None, _dynamic)
    rtol: float | None = _setting(None, _tolerance)
    atol: float | None = _setting(None, _tolerance)
    # Compare gradients: "auto" when the target has parameters that require grad.
    grads: str = _setting("auto", _grads)
    timeout: float = _setting(120.0, _seconds)
    workers: int = _setting(1, _count, alias="workerCount", results=False)
    memory_limit_mb: int = _setting(8192, _count, alias="memoryLimitMb")
    excludes: list[str] = _setting(list(DEFAULT_EXCLUDES), _str_list)
    # Extra example functions or targets elsewhere: "path/to/file.py:name".
    targets: list[str] = _setting([], _str_list)
    # Try zero-config guesses for argument-free nn.Module classes.
    guess_targets: bool = _setting(True, _flag, alias="guessTargets")
    # Show breaks and recompiles whose cause is in library code (on the user's calling line).
    library_findings: bool = _setting(True, _flag, alias="libraryFindings")
    recompile_probes: int = _setting(4, _count, alias="recompileProbes")
    # CPU threads while timing (torch.utils.benchmark's default is 1: comparable, stable).
    timing_threads: int = _setting(1, _count, alias="timingThreads")
    recompile_limit: int = _setting(8, _count, alias="recompileLimit")
    keep_diagnostics_on_close: bool = _setting(
        True, _flag, alias="keepDiagnosticsOnClose", live=True
    )
    # The accepted findings (report/baseline.py), relative to the workspace: a check fails
    # only on findings not in it. "" for none. The daemon only marks what it shows with it.
    baseline: str = _setting("", _text, live=True)
    # The editor's view of findings the baseline accepts (server/known.py): "same" as any
    # other, "hint" at Hint severity, "hide" not shown.
    known_findings: str = _setting("same", _known, alias="knownFindings", live=True)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self) -> dict[str, Any]:
        """The settings that change analysis results (cache key material)."""
        return {f.name: getattr(self, f.name) for f in _SETTINGS if f.metadata["results"]}

    def same_but_live(self, other: Config) -> bool:
        """Whether ``other`` differs from this only in settings applied without a restart."""
        return all(
            getattr(self, f.name) == getattr(other, f.name)
            for f in _SETTINGS
            if not f.metadata["live"]
        )


_SETTINGS = dataclasses.fields(Config)
_FIELDS = {f.name: f for f in _SETTINGS}
# Editor (camelCase) names that are not just the field's own.
ALIASES = {f.metadata["alias"]: f.name for f in _SETTINGS if f.metadata["alias"]}


def _norm_key(key: str) -> str:
    if key in ALIASES:
        return ALIASES[key]
    return key.replace("-", "_")


def apply(base: Config, settings: dict[str, Any], origin: str) -> tuple[Config, list[str]]:
    """Overlay ``settings`` on ``base``; returns the new config and one message per bad value."""
    cfg = dataclasses.replace(base)
    problems: list[str] = []
    for raw_key, value in settings.items():
        key = _norm_key(raw_key)
        f = _FIELDS.get(key)
        if f is None:
            problems.append(f"{origin}: unknown setting '{raw_key}' ignored")
            continue
        ok, norm = f.metadata["check"](value)
        if not ok:
            problems.append(
                f"{origin}: setting '{raw_key}' has bad value {value!r}; "
                f"using the default {getattr(Config(), key)!r}"
            )
            continue
        setattr(cfg, key, norm)
    return cfg, problems


def load_pyproject(root: Path) -> tuple[dict[str, Any], list[str]]:
    """The `[tool.dynamo-lens]` table of ``root/pyproject.toml`` (empty when absent)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}, []
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: cannot read pyproject.toml ({exc}); using defaults"]
    table = data.get("tool", {}).get("dynamo-lens", {})
    if not isinstance(table, dict):
        return {}, [f"{path}: [tool.dynamo-lens] is not a table; using defaults"]
    return table, []


def load(root: Path, overrides: dict[str, Any] | None = None) -> tuple[Config, list[str]]:
    """Defaults, then pyproject.toml, then ``overrides`` (editor settings or CLI flags)."""
    table, problems = load_pyproject(root)
    cfg, more = apply(Config(), table, f"{root / 'pyproject.toml'} [tool.dynamo-lens]")
    problems += more
    if overrides:
        cfg, more = apply(cfg, overrides, "settings")
        problems += more
    problems += _target_problems(root, cfg.targets)
    return cfg, problems


def _target_problems(root: Path, targets: list[str]) -> list[str]:
    """A configured target that can never be analysed is said so, not silently ignored."""
    out = []
    real_root = root.resolve()
    for t in targets:
        file_part, _, name = t.rpartition(":")
        if not file_part or not name:
            out.append(f"target {t!r} is not 'path/to/file.py:name'; ignored")
            continue
        path = (root / file_part).resolve()
        if not path.is_relative_to(real_root):
            out.append(f"target {t!r} is outside the workspace {root}; ignored")
        elif not path.is_file():
            out.append(f"target {t!r}: no such file {path}; ignored")
    return out
