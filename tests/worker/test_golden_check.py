"""The recorded results behind the check goldens (tests/golden/check/) are what the engine finds
now on example_workspace: breaks and recompiles, finding for finding (its renderings are
compared in the unit tier, tests/unit/test_golden.py).

``--update-golden`` re-records them from this torch."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.findings import to_wire
from dynamo_lens.texts.source import iter_python_files
from support.goldens import GOLDEN, check, dumps, normalise

WS = REPO / "example_workspace"
RESULTS = GOLDEN / "check" / "example_workspace.results.json"


def test_the_engine_finds_what_the_check_goldens_show(request: pytest.FixtureRequest) -> None:
    import torch

    recorded = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    update = request.config.getoption("--update-golden")
    if not update and recorded.get("environment", {}).get("torch") != torch.__version__:
        pytest.skip(f"recorded with torch {recorded.get('environment', {}).get('torch')}")
    cfg, _ = load(WS, {"checks": ["breaks", "recompiles"]})
    with Engine(WS, cfg) as engine:
        results = [
            engine.analyze_file(f, ["breaks", "recompiles"])
            for f in iter_python_files([WS], cfg.excludes)
        ]
    environment = {"torch": torch.__version__, "config": cfg.fingerprint()}
    data = normalise({"environment": environment, "results": to_wire(results)}, WS)
    for report in (r for res in data["results"] for r in res["reports"]):
        # Where the worker runs and what devices it saw: this machine's, not the finding's.
        for key in ("python", "platform", "executable", "device_names", "cuda"):
            report["environment"].pop(key, None)
    check(request, "check/example_workspace.results.json", dumps(data))
