"""Reconciling static hints with dynamic graph breaks: confirm, refute, remember, forget."""

from __future__ import annotations

from dynamo_lens.findings import Finding, Frame, Kind, Severity
from dynamo_lens.static import Reconciler, analyze_source, function_hashes, reachable_functions
from dynamo_lens.static.reconcile import _norm

PATH = "/ws/models/net.py"

SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        print("activations", h.shape)
        return self.head(h)

    def head(self, h):
        if h.mean() > 0:
            h = -h
        return h.sum().item()
"""


def line_of(source: str, text: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


def graph_break(line: int, path: str = PATH, stack: list[Frame] | None = None) -> Finding:
    return Finding(
        kind=Kind.GRAPH_BREAK,
        severity=Severity.WARNING,
        path=path,
        line=line,
        column=9,
        end_line=line,
        end_column=20,
        message="Graph break: something",
        stack=stack or [],
    )


def rules(findings: list[Finding]) -> list[str]:
    return sorted(str(f.data["rule"]) for f in findings)


def test_static_hints_for_the_fixture() -> None:
    assert rules(analyze_source(SOURCE, PATH)) == [
        "data-dependent-branch",
        "print-call",
        "tensor-item",
    ]


def test_confirmed_hint_is_dropped_for_the_real_finding() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    r.update_dynamic(PATH, SOURCE, [graph_break(line_of(SOURCE, "print("))], covered_functions=None)
    visible = r.visible(PATH, SOURCE, hints)
    assert rules(visible) == ["data-dependent-branch", "tensor-item"]
    printed = next(h for h in hints if h.data["rule"] == "print-call")
    assert r.verdict(PATH, SOURCE, printed) == "confirmed"


def test_break_whose_stack_passes_through_the_line_confirms() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    ln = line_of(SOURCE, ".item()")
    deep = graph_break(120, path="/venv/site-packages/torch/_tensor.py")
    deep.stack = [Frame(PATH, line_of(SOURCE, "self.head(h)"), "forward"), Frame(PATH, ln, "head")]
    r.update_dynamic(PATH, SOURCE, [deep], covered_functions=None)
    assert "tensor-item" not in rules(r.visible(PATH, SOURCE, hints))


def test_covered_function_without_break_refutes_its_hints() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    # The run traced both functions and broke only at the print.
    r.update_dynamic(
        PATH,
        SOURCE,
        [graph_break(line_of(SOURCE, "print("))],
        covered_functions={"Net.forward", "Net.head"},
    )
    assert r.visible(PATH, SOURCE, hints) == []
    item = next(h for h in hints if h.data["rule"] == "tensor-item")
    assert r.verdict(PATH, SOURCE, item) == "refuted"


def test_uncovered_function_keeps_its_hints() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward"})
    assert rules(r.visible(PATH, SOURCE, hints)) == ["data-dependent-branch", "tensor-item"]


def test_unknown_coverage_never_refutes() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    r.update_dynamic(PATH, SOURCE, [], covered_functions=None)
    assert len(r.visible(PATH, SOURCE, hints)) == 3


def test_refutation_survives_edits_elsewhere_and_lapses_when_the_function_changes() -> None:
    r = Reconciler()
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward", "Net.head"})
    assert r.visible(PATH, SOURCE, analyze_source(SOURCE, PATH)) == []

    # Lines added above both functions: every hint moves down, the verdicts still apply.
    shifted = SOURCE.replace("import torch\n", "import torch\nimport math\n\nSCALE = 2\n", 1)
    shifted_hints = analyze_source(shifted, PATH)
    assert [h.line for h in shifted_hints] != [h.line for h in analyze_source(SOURCE, PATH)]
    assert r.visible(PATH, shifted, shifted_hints) == []

    # Editing head() (not forward) brings back head's hints only.
    edited = shifted.replace("h = -h", "h = h * -1.0")
    assert rules(r.visible(PATH, edited, analyze_source(edited, PATH))) == [
        "data-dependent-branch",
        "tensor-item",
    ]

    # Undoing the edit restores the remembered verdict for the old text.
    assert r.visible(PATH, shifted, shifted_hints) == []


def test_new_run_overrides_old_verdict_for_the_same_text() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward", "Net.head"})
    assert r.visible(PATH, SOURCE, hints) == []
    # A later run (other inputs) breaks at the branch: confirmed now, still hidden.
    ln = line_of(SOURCE, "if h.mean()")
    r.update_dynamic(PATH, SOURCE, [graph_break(ln)], covered_functions={"Net.head"})
    branch = next(h for h in hints if h.data["rule"] == "data-dependent-branch")
    assert r.verdict(PATH, SOURCE, branch) == "confirmed"


def test_paths_are_separate_and_forget_drops_state() -> None:
    r = Reconciler()
    other = "/ws/models/other.py"
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward", "Net.head"})
    assert len(r.visible(other, SOURCE, analyze_source(SOURCE, other))) == 3
    r.forget(PATH)
    assert len(r.visible(PATH, SOURCE, analyze_source(SOURCE, PATH))) == 3
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward", "Net.head"})
    r.forget()
    assert len(r.visible(PATH, SOURCE, analyze_source(SOURCE, PATH))) == 3


def test_non_graph_break_findings_do_not_confirm() -> None:
    r = Reconciler()
    hints = analyze_source(SOURCE, PATH)
    f = graph_break(line_of(SOURCE, "print("))
    f.kind = Kind.RECOMPILE
    r.update_dynamic(PATH, SOURCE, [f], covered_functions=None)
    assert len(r.visible(PATH, SOURCE, hints)) == 3


def test_versions_per_function_are_bounded() -> None:
    r = Reconciler(versions_per_function=2)
    for i in range(5):
        src = SOURCE.replace("h = -h", f"h = -h * {i + 1}")
        r.update_dynamic(PATH, src, [], covered_functions={"Net.head"})
    assert len(r._verdicts[(_norm(PATH), "Net.head")]) == 2


def test_function_hashes_and_reachable_functions() -> None:
    fh = function_hashes(SOURCE)
    assert set(fh) == {"Net.__init__", "Net.forward", "Net.head"}
    assert fh["Net.forward"].start == line_of(SOURCE, "def forward")
    assert function_hashes("def broken(:\n") == {}
    nested = "def outer():\n    def inner():\n        pass\n    return inner\n"
    assert set(function_hashes(nested)) == {"outer", "outer.<locals>.inner"}
    assert reachable_functions(SOURCE, PATH) == {"Net": {"Net.forward", "Net.head"}}


def test_hints_carry_their_function_identity_so_visible_needs_no_parse() -> None:
    hints = analyze_source(SOURCE, PATH)
    fh = function_hashes(SOURCE)
    for h in hints:
        ft = fh[str(h.data["function"])]
        assert (h.data["function_start"], h.data["function_digest"]) == (ft.start, ft.digest)
    r = Reconciler()
    r.update_dynamic(PATH, SOURCE, [], covered_functions={"Net.forward", "Net.head"})
    # The source argument is not even parsed when hints carry their identity.
    assert r.visible(PATH, "not python (", hints) == []
    # Older hints without it (e.g. from a cache) fall back to parsing the source.
    for h in hints:
        del h.data["function_start"], h.data["function_digest"]
    assert r.visible(PATH, SOURCE, hints) == []
    assert len(r.visible(PATH, "not python (", hints)) == 3
