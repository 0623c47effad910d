"""Settings: defaults, `[tool.dynamo-lens]` in pyproject.toml, and validation.

A bad value never aborts anything: it is reported as a message and the default is used.
Editor settings (camelCase) and pyproject keys (kebab-case or snake_case) are both accepted.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The naming rule for example functions, everywhere it is applied (worker discovery, the
# engine's pre-filter on raw bytes, static hints, code actions): module-level
# `compile_example` or `compile_example_<suffix>`.
EXAMPLE_NAME = re.compile(r"compile_example(?:_\w+)?")
EXAMPLE_DEF = re.compile(rb"^def\s+" + EXAMPLE_NAME.pattern.encode() + rb"\s*\(", re.M)


def is_example_name(name: str) -> bool:
    return EXAMPLE_NAME.fullmatch(name) is not None


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

ALL_CHECKS = ("breaks", "recompiles", "equivalence", "timings")
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


@dataclass
class Config:
    # "auto" means cpu plus every CUDA device the worker finds.
    devices: list[str] = field(default_factory=lambda: ["auto"])
    checks: list[str] = field(default_factory=lambda: list(ALL_CHECKS))
    checks_on_save: list[str] = field(default_factory=lambda: ["breaks", "recompiles"])
    backend: str = "inductor"
    mode: str = "default"
    # None: torch's default (automatic dynamic shapes after the first recompile).
    dynamic: bool | None = None
    rtol: float | None = None
    atol: float | None = None
    # Compare gradients: "auto" when the target has parameters that require grad.
    grads: str = "auto"
    timeout: float = 120.0
    workers: int = 1
    memory_limit_mb: int = 8192
    excludes: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    # Extra example functions or targets elsewhere: "path/to/file.py:name".
    targets: list[str] = field(default_factory=list)
    # Try zero-config guesses for argument-free nn.Module classes.
    guess_targets: bool = True
    # Show breaks and recompiles whose cause is in library code (on the user's calling line).
    library_findings: bool = True
    recompile_probes: int = 4
    # CPU threads while timing (torch.utils.benchmark's default is 1: comparable, stable).
    timing_threads: int = 1
    recompile_limit: int = 8
    keep_diagnostics_on_close: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self) -> dict[str, Any]:
        """The settings that change analysis results (cache key material)."""
        d = self.to_dict()
        for k in ("workers", "keep_diagnostics_on_close", "checks_on_save"):
            d.pop(k, None)
        return d


ALIASES = {
    "checksOnSave": "checks_on_save",
    "memoryLimitMb": "memory_limit_mb",
    "guessTargets": "guess_targets",
    "libraryFindings": "library_findings",
    "recompileProbes": "recompile_probes",
    "recompileLimit": "recompile_limit",
    "timingThreads": "timing_threads",
    "keepDiagnosticsOnClose": "keep_diagnostics_on_close",
    "workerCount": "workers",
}


def _norm_key(key: str) -> str:
    if key in ALIASES:
        return ALIASES[key]
    return key.replace("-", "_")


def _as_str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _check_list(value: Any) -> list[str] | None:
    items = _as_str_list(value)
    if items is None:
        return None
    if items == ["all"]:
        return list(ALL_CHECKS)
    if all(i in ALL_CHECKS for i in items):
        return items
    return None


def _devices(value: Any) -> list[str] | None:
    items = _as_str_list(value)
    if not items:
        return None
    for d in items:
        if d in ("auto", "cpu", "cuda"):
            continue
        if d.startswith("cuda:") and d[5:].isdigit():
            continue
        return None
    return items


def _pos_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


def _pos_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _opt_tol(value: Any) -> float | bool | None:
    # Returns False for "invalid" so None ("use the dtype default") stays expressible.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return False
    return float(value)


def _validate(key: str, value: Any) -> tuple[bool, Any]:
    """(ok, normalised value) for one setting."""
    if key in ("checks", "checks_on_save"):
        v = _check_list(value)
        return v is not None, v
    if key == "devices":
        v = _devices(value)
        return v is not None, v
    if key == "backend":
        return isinstance(value, str) and bool(value), value
    if key == "mode":
        return value in MODES, value
    if key == "dynamic":
        if value in (None, "auto"):
            return True, None
        return isinstance(value, bool), value
    if key in ("rtol", "atol"):
        tol = _opt_tol(value)
        return tol is not False, tol
    if key == "grads":
        return value in ("auto", "always", "never"), value
    if key == "timeout":
        num = _pos_number(value)
        return num is not None, num
    if key in (
        "workers",
        "memory_limit_mb",
        "recompile_probes",
        "recompile_limit",
        "timing_threads",
    ):
        count = _pos_int(value)
        return count is not None, count
    if key in ("excludes", "targets"):
        v = _as_str_list(value)
        return v is not None, v
    if key in ("guess_targets", "keep_diagnostics_on_close", "library_findings"):
        return isinstance(value, bool), value
    return False, value


_FIELDS = {f.name for f in dataclasses.fields(Config)}


def apply(base: Config, settings: dict[str, Any], origin: str) -> tuple[Config, list[str]]:
    """Overlay ``settings`` on ``base``; returns the new config and one message per bad value."""
    cfg = dataclasses.replace(base)
    problems: list[str] = []
    for raw_key, value in settings.items():
        key = _norm_key(raw_key)
        if key not in _FIELDS:
            problems.append(f"{origin}: unknown setting '{raw_key}' ignored")
            continue
        ok, norm = _validate(key, value)
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
