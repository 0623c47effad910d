"""Every rule of the fix catalogue is registered (fixes/registry.py) and shown, in its
family's test file beside this one, proposing on a case and declining on another."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from dynamo_lens.fixes import catalogue
from dynamo_lens.fixes.registry import RULES, ordered

HERE = Path(__file__).resolve().parent


def _family_tests() -> list[ModuleType]:
    out = []
    for path in sorted(HERE.glob("test_fixes_*.py")):
        spec = importlib.util.spec_from_file_location(f"_fix_family_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out.append(mod)
    return out


def test_every_registered_rule_has_positive_and_negative_cases() -> None:
    cases: dict[str, tuple[list[object], list[object]]] = {}
    for mod in _family_tests():
        for code, pair in mod.CASES.items():
            assert code not in cases, f"{code} has cases in two files"
            cases[code] = pair
    assert set(cases) == set(RULES), set(cases) ^ set(RULES)
    for code, (positive, negative) in cases.items():
        assert positive and negative, f"{code}: needs a case each way"


def test_every_rule_lives_in_a_family_module_the_catalogue_imports() -> None:
    families = {m.__name__ for m in catalogue.FAMILIES}
    assert {r.fn.__module__ for r in RULES.values()} == families
    # The order rules are tried in is total: no two share a rank.
    ranks = [r.rank for r in ordered()]
    assert len(ranks) == len(set(ranks))


def test_what_a_rule_is_registered_as_reaches_its_rewrite() -> None:
    from support.fix_cases import rules_proposed  # noqa: F401  (the shared helper imports)

    for mod in _family_tests():
        for code, (positive, _) in mod.CASES.items():
            rule = RULES[code]
            for case in positive:
                found = [
                    rw
                    for rw in catalogue.propose(case.finding(), case.source, in_workspace=True)
                    if rw.rule == code
                ]
                assert found, code
                assert all(rw.module_wide == rule.module_wide for rw in found), code
                assert all(rw.selects == rule.selecting for rw in found), code
                assert case.kind in rule.kinds, code
