"""The invariants of docs/architecture.md that the code's shape alone shows: which package may
import which, no import circles, only the worker imports torch, only the LSP edge knows LSP,
and no module grows past what a newcomer can read."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PKG = REPO / "daemon" / "dynamo_lens"
MAX_LINES = 600

# Each part may import only parts of a lower layer (and itself). The worker and the daemon sit
# side by side: neither imports the other.
LAYERS = {
    # The package's __init__ is its entry points (``%load_ext dynamo_lens``): above all else.
    "dynamo_lens": 8,
    "version": 0,
    "findings": 0,
    "config": 0,
    "wire": 0,  # the msgpack channel between the parent and its workers
    "texts": 1,
    "static": 1,
    "fixes": 1,
    "notebooks": 1,  # a notebook's cells as a program, and findings back on them
    "report": 2,  # reads source lines through texts
    "engine": 2,
    "runs": 3,
    "worker": 4,
    "server": 4,
    "server.lsp": 5,
    # The live kernel: reads its cells' trace as runs/ reads a run; torch's differences between
    # releases from the worker's one module for them.
    "kernel": 5,
    "cmdpaths": 1,  # findings only: what a command line names
    "cliargs": 1,  # config only: the command line's check lists
    "cli": 6,
    "pytest_plugin": 6,
    "__main__": 7,
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(module imported, line) for every import in the file, in functions and under
    TYPE_CHECKING too: a circle through a type is still one for a reader."""
    out = []
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            for a in node.names:
                sub = f"{prefix}.{a.name}"
                out.append((sub if sub in MODULES else prefix, node.lineno))
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "dynamo_lens"
    if parts[1] == "server" and len(parts) > 2 and parts[2] == "lsp":
        return "server.lsp"
    return parts[1]


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for name, path in MODULES.items():
        mine = _layer(name)
        for imported, line in _imports(name, path):
            if imported not in MODULES:
                continue
            theirs = _layer(imported)
            if theirs != mine and LAYERS[theirs] >= LAYERS[mine]:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {mine} imports {theirs}")
    assert not wrong, "\n".join(wrong)


def test_no_import_circle_anywhere_in_the_daemon() -> None:
    graph = {
        name: {m for m, _ in _imports(name, path) if m in MODULES and m != name}
        for name, path in MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_only_the_worker_imports_torch() -> None:
    # And the live kernel's capture, which runs in the user's own kernel (torch is there).
    wrong = [
        f"{path.relative_to(REPO)}:{line}"
        for name, path in MODULES.items()
        if _layer(name) not in ("worker", "kernel")
        for imported, line in _imports(name, path)
        if imported == "torch" or imported.startswith("torch.")
    ]
    assert not wrong, wrong


def test_only_the_lsp_edge_knows_lsp() -> None:
    wrong = [
        f"{path.relative_to(REPO)}:{line}: {imported}"
        for name, path in MODULES.items()
        if _layer(name) != "server.lsp"
        for imported, line in _imports(name, path)
        if imported.split(".")[0] in ("pygls", "lsprotocol")
    ]
    assert not wrong, wrong


# Every Python tree of ours: the product, its tests and their fixtures, benchmarks, scripts and
# the example workspace. Not installed or fetched trees (venvs, tools, the extension's bundle).
PYTHON_TREES = ("daemon", "tests", "bench", "scripts", "example_workspace")


def test_no_module_is_over_600_lines() -> None:
    files = [p for tree in PYTHON_TREES for p in (REPO / tree).rglob("*.py")]
    assert len(files) > 200, "the trees moved: the cap would scan nothing"
    long = {
        str(p.relative_to(REPO)): n
        for p in files
        if (n := len(p.read_bytes().splitlines())) > MAX_LINES  # fixtures test bad encodings
    }
    assert not long, long


def _sleeps_outside_a_loop(tree: ast.AST) -> list[int]:
    """Lines of ``time.sleep``/``asyncio.sleep`` calls not inside a ``while`` or ``for`` loop."""
    out: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "sleep" and not in_loop:
                out.append(node.lineno)
        # A function defined inside a loop is not polling in it.
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_loop = False
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop or isinstance(node, (ast.While, ast.For, ast.AsyncFor)))

    visit(tree, False)
    return out


def test_tests_sleep_only_while_polling_for_an_event() -> None:
    """A test waits for an event (a log line, a notification, a file, a process gone): a sleep
    is a poll's pause inside the loop that checks for it, never a fixed wait. Fixtures are user
    code that sleeps on purpose (a hang), and are not tests."""
    files = [
        p for p in (REPO / "tests").rglob("*.py") if "fixtures" not in p.relative_to(REPO).parts
    ]
    wrong = [
        f"{p.relative_to(REPO)}:{line}"
        for p in files
        for line in _sleeps_outside_a_loop(ast.parse(p.read_text()))
    ]
    assert not wrong, wrong
