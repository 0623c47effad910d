"""``fix``'s report: each break's rewrite, its verdict and diff, as text or a JSON dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def fix_dict(fix: Any, root: Path) -> dict[str, Any]:
    f, rw = fix.finding, fix.rewrite
    return {
        "path": _rel(f.path, root),
        "line": f.line,
        "gb_type": f.data.get("gb_type", ""),
        "gb_id": f.gb_id,
        "message": f.message,
        "targets": fix.targets,
        "rule": rw.rule if rw else None,
        "title": rw.title if rw else None,
        "verified": fix.verified,
        "claim": fix.claim if fix.verified else None,
        "applicable": fix.applicable,
        "checks": fix.checks,
        "why": fix.why,
        "refused": fix.refused,
        "seconds": round(fix.seconds, 3),
        "diff": fix.diff,
    }


def render(report: list[Any], applied: list[Any], problems: list[Any], root: Path) -> str:
    from . import text as textout

    lines = [textout.line_for(p, root) for p in problems]
    for fix in applied:
        d = fix_dict(fix, root)
        lines.append(f"applied {d['rule']} at {d['path']}:{d['line']} (verified: {d['claim']})")
    for fix in report:
        d = fix_dict(fix, root)
        lines.append(f"{d['path']}:{d['line']}: {d['gb_type'] or d['message']}")
        lines.append(f"  reported by {', '.join(d['targets'])}")
        if d["rule"]:
            state = f"verified: {d['claim']}" if d["verified"] else "not verified"
            if d["verified"] and not d["applicable"]:
                state += "; --apply does not write it"
            lines.append(f"  {d['rule']}: {d['title']} ({state}; {d['seconds']:.1f} s)")
        for c in d["checks"]:
            mark = "ok  " if c["ok"] else "FAIL"
            lines.append(f"    {mark} {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))
        if d["why"]:
            lines.append(f"  {d['why']}")
        for r in d["refused"]:
            failed = ", ".join(r["failed"]) or "not applicable"
            lines.append(f"  also tried: {r['rule']}, refused ({failed})")
        if d["diff"]:
            lines += ["    " + ln for ln in d["diff"].rstrip("\n").splitlines()]
    if not report and not applied and not problems:
        lines.append("no graph breaks")
    return "\n".join(lines)
