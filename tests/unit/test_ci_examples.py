"""The CI examples we hand to users stay true to the CLI and the plugin: the GitHub Actions
workflow under docs/ci parses, and every dynamo-lens and pytest command in it is accepted by
the parsers as they are now. The pre-commit manifest is run by pre-commit itself in
tests/worker/test_precommit.py,
the workflow's pytest command in tests/worker/test_pytest_plugin.py."""

from __future__ import annotations

import shlex

import yaml
from conftest import REPO
from dynamo_lens.cli import _parser

WORKFLOW = REPO / "docs" / "ci" / "github-actions.yml"


def _commands(doc: dict) -> list[list[str]]:
    out = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                words = shlex.split(line, comments=True)
                if words[:1] in (["dynamo-lens"], ["pytest"]):
                    out.append(words)
    return out


def test_the_workflow_uploads_sarif_and_fails_only_through_the_gate() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    steps = [s for job in doc["jobs"].values() for s in job["steps"]]
    upload = [
        s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")
    ]
    assert upload and upload[0]["with"]["sarif_file"] == "dynamo-lens.sarif"
    assert doc["permissions"]["security-events"] == "write"
    cmds = _commands(doc)
    check = [c for c in cmds if c[:2] == ["dynamo-lens", "check"]]
    assert check and "sarif" in check[0]
    for words in check:
        args = _parser().parse_args(words[1:])
        assert args.format == "sarif" and str(args.output) == "dynamo-lens.sarif"
