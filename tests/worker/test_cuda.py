"""CUDA device paths: placement, per-device equivalence and synchronised timings.

Skipped cleanly where no CUDA device exists (CI); run on a GPU machine with `pytest -m cuda`.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, check_json


@pytest.mark.cuda
def test_equivalence_runs_on_cpu_and_cuda() -> None:
    rc, doc, err = check_json(
        str(FIXTURES / "equiv"), "--backend", "inductor", "--device", "cpu", "--device", "cuda:0"
    )
    assert rc == 0, (doc["findings"], err)
    (target,) = doc["targets"]
    devices = [e["device"] for e in target["equivalence"]]
    assert devices == ["cpu", "cuda:0"]
    assert all(e["ok"] and e["gradients"] == 4 for e in target["equivalence"])
    assert "cuda:0" in doc["environment"]["devices"]


@pytest.mark.cuda
def test_timings_on_cuda_are_synchronised_medians() -> None:
    rc, doc, err = check_json(
        str(FIXTURES / "engine" / "small.py"), "--checks", "timings", "--device", "cuda:0"
    )
    assert rc == 0, (doc["findings"], err)
    (target,) = doc["targets"]
    (t,) = target["timings"]
    assert t["device"] == "cuda:0" and t["backend"] == "inductor"
    assert t["eager_median"] > 0 and t["compiled_median"] > 0
    assert t["cold_compile"] > t["compiled_median"]
    assert target["environment"]["device_names"]["cuda:0"].startswith("cuda:0 (")


def test_absent_device_is_skipped_and_said() -> None:
    _, doc, _ = check_json(
        str(FIXTURES / "engine" / "small.py"), "--checks", "equivalence", "--device", "cuda:7"
    )
    (target,) = doc["targets"]
    assert target["equivalence"] == []
    assert target["environment"]["devices_missing"] == ["cuda:7"]
