"""Compiled vs eager: a backend that changes results is caught, faithful ones are not."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, check_json

EQUIV = FIXTURES / "equiv"


def _mismatches(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] == "mismatch"]


def test_perturbing_backend_is_a_mismatch_on_the_class_line() -> None:
    rc, doc, err = check_json(str(EQUIV), "--backend", "perturb_backend:perturb")
    found = _mismatches(doc)
    assert rc == 1, err
    assert len(found) == 1, doc["findings"]
    m = found[0]
    assert m["severity"] == "error"
    assert m["path"].endswith("model.py")
    assert m["line"] == 5  # class TinyMLP
    assert m["device"] == "cpu"
    assert "max abs error 0.1" in m["message"]
    assert "atol" in m["message"] and "rtol" in m["message"]
    assert m["data"]["gradients_compared"] is True
    (target,) = doc["targets"]
    assert target["equivalence"][0]["ok"] is False


def test_faithful_backend_agrees_and_compares_gradients() -> None:
    rc, doc, err = check_json(str(EQUIV), "--backend", "aot_eager")
    assert _mismatches(doc) == [], doc["findings"]
    assert rc == 0, err
    (target,) = doc["targets"]
    (summary,) = target["equivalence"]
    assert summary["ok"] is True
    assert summary["outputs"] == 2
    assert summary["gradients"] == 4  # fc1/fc2 weight and bias
    assert target["environment"]["backend"] == "aot_eager"


@pytest.mark.slow
def test_inductor_agrees_with_eager() -> None:
    _, doc, _ = check_json(str(EQUIV), "--backend", "inductor")
    assert _mismatches(doc) == [], doc["findings"]
    assert [f for f in doc["findings"] if f["kind"] == "error"] == []
    assert doc["targets"][0]["equivalence"][0]["ok"] is True


# An output object whose class compares by identity, as transformers' `DynamicCache`: two such
# objects are always `!=`, so only the tensors they hold can say whether the results agree.
CACHE_MODEL = """\
import torch
from torch import nn


class Cache:
    def __init__(self):
        self.layers = []

    def update(self, k):
        self.layers.append({"keys": k})


class WithCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        cache = Cache()
        h = self.fc(x)
        cache.update(h * 2)
        return {"out": h.sum(), "cache": cache}


def compile_example():
    torch.manual_seed(0)
    return WithCache(), (torch.randn(4, 8),)
"""


def _cache_workspace(tmp_path):
    for name in ("perturb_backend.py", "pyproject.toml"):
        (tmp_path / name).write_text((EQUIV / name).read_text())
    (tmp_path / "model.py").write_text(CACHE_MODEL)
    return tmp_path


def test_an_output_object_compared_by_identity_is_compared_by_its_tensors(tmp_path) -> None:
    ws = _cache_workspace(tmp_path)
    rc, doc, err = check_json(str(ws / "model.py"), "--backend", "aot_eager")
    assert _mismatches(doc) == [], doc["findings"]
    assert rc == 0, err
    _, doc, _ = check_json(str(ws / "model.py"), "--backend", "perturb_backend:perturb")
    (m,) = _mismatches(doc)
    # The perturbed tensor inside the cache is named, not the cache object's identity.
    wheres = [d["where"] for d in m["data"]["differences"]]
    assert sorted(wheres) == ["output['cache']['layers'][0]['keys']", "output['out']"], wheres
