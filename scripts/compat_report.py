"""Summarise scripts/compat.sh's runs: tests per torch, and example-workspace findings that
match the pinned torch's (same file, line, kind, id, severity)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def _findings(path: Path) -> set[tuple[str, int, str, str, str]]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return set()
    return {
        (
            f["path"].split("example_workspace/")[-1],
            f["line"],
            f["kind"],
            f.get("gb_id") or "",
            f["severity"],
        )
        for f in doc.get("findings", [])
    }


def main() -> int:
    work, out, versions = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    ref = _findings(work / "example-2.13.0.json")
    rows = [
        "# torch versions: the version-sensitive tests and the example workspace",
        "",
        "`bash scripts/compat.sh` (CPU; torch from the registry, CUDA builds run on CPU). Tests: "
        "`tests/worker/test_parsing.py`, `test_example_workspace.py`, `test_realcode.py` "
        "(transformers is installed only in the pinned venv, so its case skips elsewhere), "
        "`test_runs.py` (findings from real runs: each release's structured trace). "
        "Example: `dynamo-lens check example_workspace --checks breaks,recompiles`, findings "
        "compared with torch 2.13.0's by file, line, kind, break id and severity.",
        "",
        "| torch | tests passed | failed | skipped | example findings equal to 2.13 | extra |",
        "|---|---|---|---|---|---|",
    ]
    for v in versions:
        try:
            suite = ET.parse(work / f"junit-{v}.xml").getroot()
            suite = suite if suite.tag == "testsuite" else suite[0]
            total = int(suite.get("tests", 0))
            failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skipped = int(suite.get("skipped", 0))
            passed = total - failed - skipped
        except (OSError, ET.ParseError, IndexError):
            passed = failed = skipped = -1
        mine = _findings(work / f"example-{v}.json")
        rows.append(
            f"| {v} | {passed} | {failed} | {skipped} | {len(ref & mine)}/{len(ref)} | "
            f"{len(mine - ref)} |"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
