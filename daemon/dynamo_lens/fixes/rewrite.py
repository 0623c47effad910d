"""What every rule of the catalogue produces (a ``Rewrite``: whole lines of a file replaced) and
the reading of the source they share. Torch-free."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

# The rules write their own selections with this marker, spelled out twice: ``torch.where`` in
# the text that is written, ``__dynamo_lens_where__`` in the text whose selections verification
# checks (worker/selections.py); a ``torch.where`` of the user's, inside an arm, is neither.
SELECT = "\x00select"
SELECT_CHECKED = "__dynamo_lens_where__"

# A line as Python's tokenizer ends it: "\r\n", "\r" or "\n". ``str.splitlines`` also splits at
# "\f", "\v", U+2028 and others that Python keeps inside a line (a comment, a string): line
# numbers would then disagree with the AST's.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_EOL = re.compile(r"\r\n|\r")


def source_lines(source: str) -> list[str]:
    """``source``'s lines as Python counts them, each with its own line ending."""
    return _LINE.findall(source)


def spacing_after(lines: list[str], last: int, before: int) -> str:
    """The blank lines a definition added after line ``last`` still needs: two blank lines
    between it and the next code line (PEP 8; ruff's E305 and E302), counting those the file
    already has there, before line ``before`` (the first line the rewrite changes)."""
    blank = 0
    for ln in range(last + 1, before):
        if ln > len(lines) or lines[ln - 1].strip():
            break
        blank += 1
    return "\n" * max(0, 2 - blank)


def ending(line: str) -> str:
    """The line ending ``line`` has ("" for a last line without one)."""
    return line[len(line.rstrip("\r\n")) :]


@dataclass(frozen=True)
class Rewrite:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path`` replaced by ``text``."""

    rule: str
    title: str
    path: str
    start: int
    end: int
    text: str  # whole lines, each ending in a newline
    exact: bool  # outputs must be bitwise equal (else within the dtype's tolerance)
    # Lines inside start..end that ``text`` copies unchanged, as (old, new) line pairs: a
    # rewrite of statements apart from each other keeps what lies between them, and a break
    # there is the same break, moved.
    kept: tuple[tuple[int, int], ...] = ()
    # The line of the ``if`` (or ``assert``) whose test picks the path the original takes:
    # verification runs inputs that take each path. 0: no branch is rewritten.
    branch: int = 0
    # ``text`` with the rule's own selections spelled ``SELECT_CHECKED`` ("" without any).
    checked: str = ""
    # From the rule's registration (fixes/registry.py), set by ``catalogue.propose``: a setting
    # at import, verified against every target of the file; a rewrite that evaluates what the
    # original skipped, so equal outputs on the example's path are not enough; a rewrite of
    # the example's calls, run on the calls it builds.
    module_wide: bool = False
    selects: bool = False
    edits_calls: bool = False
    moves_boundary: bool = False
    # Attributes (``self.<name>``) the rewrite stops compiled calls from storing, as its title
    # says (a timer's reading): their state is not compared for compiled runs.
    skips: tuple[str, ...] = ()
    # The function (``Class.method``, as torch names it) the rewrite keeps out of the graph:
    # torch reports skipping it as a break, at the new compile boundary, which is expected.
    boundary: str = ""

    def __post_init__(self) -> None:
        # From the worker's protocol the pairs come back as lists.
        object.__setattr__(self, "kept", tuple((int(a), int(b)) for a, b in self.kept))
        object.__setattr__(self, "skips", tuple(self.skips))

    @classmethod
    def selecting(
        cls, rule: str, title: str, path: str, start: int, end: int, marked: str, **kw: object
    ) -> Rewrite:
        """A rewrite whose ``marked`` text writes the rule's selections as ``SELECT``."""
        return cls(
            rule,
            title,
            path,
            start,
            end,
            marked.replace(SELECT, "torch.where"),
            checked=marked.replace(SELECT, SELECT_CHECKED),
            **kw,  # type: ignore[arg-type]
        )

    def replacement(self, source: str) -> str:
        """``text`` as it goes into ``source``: each new line ends as the first replaced line
        does (CRLF stays CRLF, in a file of mixed endings too), and a last line of the file
        without a newline stays without one."""
        lines = source_lines(source)
        replaced = lines[self.start - 1 : self.end]
        eol = next((ending(ln) for ln in replaced if ending(ln)), "")
        if not eol:  # the replaced lines end the file without a newline: the file's own
            eol = next((ending(ln) for ln in reversed(lines) if ending(ln)), "\n")
        # The rules copy original lines, endings and all: one ending first, then the file's.
        text = _EOL.sub("\n", self.text)
        text = text.replace("\n", eol) if eol != "\n" else text
        if replaced and not ending(replaced[-1]) and self.end >= len(lines):
            text = text[: -len(eol)] if text.endswith(eol) else text
        return text

    def apply(self, source: str) -> str:
        """``source`` with the lines replaced; every other character kept as it was."""
        lines = source_lines(source)
        return "".join([*lines[: self.start - 1], self.replacement(source), *lines[self.end :]])

    @property
    def delta(self) -> int:
        return self.text.count("\n") - (self.end - self.start + 1)

    def new_line(self, old: int) -> int | None:
        """Where original line ``old`` sits after the rewrite; None inside the replaced lines."""
        if old < self.start:
            return old
        if old > self.end:
            return old + self.delta
        return dict(self.kept).get(old)

    def diff(self, source: str, label: str) -> str:
        return "".join(
            difflib.unified_diff(
                source_lines(source),
                source_lines(self.apply(source)),
                f"a/{label}",
                f"b/{label}",
            )
        )


def imports_torch(tree: ast.Module) -> bool:
    return imports(tree, "torch")


def imports(tree: ast.Module, module: str) -> bool:
    """Whether the file imports ``module`` under its own name, at its top level."""
    return any(
        isinstance(n, ast.Import) and any(a.name == module and a.asname is None for a in n.names)
        for n in tree.body
    )


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement that starts on ``line``."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.lineno != line:
            continue
        if best is None or node.col_offset >= best.col_offset:
            best = node
    return best


def is_elif(source: str, node: ast.stmt | None) -> bool:
    """Whether ``node`` is an ``elif``: an ``If`` the parser puts alone in its parent's
    ``orelse``. Replacing its lines would run it whatever the earlier tests said."""
    if not isinstance(node, ast.If):
        return False
    return source_lines(source)[node.lineno - 1].lstrip().startswith("elif")


def lines_of(source: str, node: ast.stmt) -> list[str]:
    lines = source_lines(source)
    return lines[node.lineno - 1 : (node.end_lineno or node.lineno)]


def eager_only(source: str, node: ast.stmt) -> str:
    """The statement ``node`` run only in eager: under ``if not
    torch.compiler.is_compiling():``, which torch's tracing takes as false. Its lines move one
    level in, but for those inside a string that spans lines (their text is the string's)."""
    body = lines_of(source, node)
    inside = string_interiors(node)
    first = body[0]
    indent = first[: len(first) - len(first.lstrip())]
    step = indent_step(indent)
    return f"{indent}if not torch.compiler.is_compiling():\n" + "".join(
        (step + ln if ln.strip() and node.lineno + i not in inside else ln)
        for i, ln in enumerate(body)
    )


def string_interiors(node: ast.AST) -> set[int]:
    """The lines under ``node`` that begin inside a string literal (a triple-quoted string's
    second line and after)."""
    out: set[int] = set()
    for n in ast.walk(node):
        text = isinstance(n, ast.JoinedStr) or (
            isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes))
        )
        if text and (n.end_lineno or n.lineno) > n.lineno:  # type: ignore[attr-defined]
            out.update(range(n.lineno + 1, (n.end_lineno or n.lineno) + 1))  # type: ignore[attr-defined]
    return out


def own_nodes(fn: ast.FunctionDef) -> list[ast.AST]:
    """The function's own statements and expressions: not those of functions, lambdas or
    classes defined inside it (their definitions themselves are included)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def indent_step(indent: str) -> str:
    """One more level of indentation in the style of ``indent``: a tab where the file indents
    with tabs (mixing them with spaces is a TabError)."""
    return "\t" if "\t" in indent else "    "


def whole_lines(source: str, node: ast.stmt, last: ast.stmt) -> bool:
    """Whether ``node``..``last`` fill their lines (no ``a; print(x)``): only whole lines are
    replaced."""
    # The AST's columns count UTF-8 bytes.
    lines = [ln.rstrip("\r\n").encode() for ln in source_lines(source)]
    first, end = lines[node.lineno - 1], lines[(last.end_lineno or last.lineno) - 1]
    return node.col_offset == len(first) - len(first.lstrip()) and last.end_col_offset == len(
        end.split(b"#")[0].rstrip()
    )


def single_assign(body: list[ast.stmt]) -> tuple[str, ast.expr] | None:
    if len(body) != 1:
        return None
    s = body[0]
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id, s.value
    return None


def single_return(body: list[ast.stmt]) -> ast.expr | None:
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def fresh_name(tree: ast.AST, base: str) -> str:
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    out, i = base, 1
    while out in used:
        i += 1
        out = f"{base}{i}"
    return out


def indent_and_comment(source: str, node: ast.stmt, head: ast.expr) -> tuple[str, str]:
    """The statement's indentation, and a comment after ``head`` on its first line (kept on
    the new line)."""
    first = lines_of(source, node)[0]
    indent = first[: len(first) - len(first.lstrip())]
    after = first.rstrip("\r\n").encode()[head.end_col_offset or 0 :].decode(errors="replace")
    return indent, ("  " + after[after.index("#") :] if "#" in after else "")


def block_of(root: ast.AST, node: ast.stmt) -> list[ast.stmt] | None:
    """The statement list under ``root`` that holds ``node``."""
    for parent in ast.walk(root):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                return block
    return None


def following(tree: ast.Module, node: ast.stmt) -> ast.stmt | None:
    """The statement right after ``node`` in the same block."""
    block = block_of(tree, node)
    if block is None:
        return None
    i = block.index(node)
    return block[i + 1] if i + 1 < len(block) else None


def names(nodes: list[ast.stmt], ctx: type) -> set[str]:
    """The names ``nodes`` store (``ast.Store``) or read (``ast.Load``)."""
    return {
        n.id
        for s in nodes
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)
    }


def bindings(tree: ast.AST) -> Counter[str]:
    """How many times the file binds each name: assignments, imports, definitions, parameters,
    ``global`` statements (a ``ValueError`` class of the file's own, a logger rebound)."""
    out: Counter[str] = Counter()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] += 1
        elif isinstance(n, ast.alias):
            out[(n.asname or n.name).split(".")[0]] += 1
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] += 1
        elif isinstance(n, ast.arg):
            out[n.arg] += 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def parameters(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}


def with_comments(source: str, rw: Rewrite) -> Rewrite:
    """``rw`` keeping the comments of the lines it replaces: one its text does not carry
    (``# TODO(alice): ...`` inside a branch that became a selection) goes on a line of its own
    above the new text, at the indentation of the first line replaced."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return rw
    kept = {old for old, _ in rw.kept}
    lost = [
        t.string
        for t in tokens
        if t.type == tokenize.COMMENT
        and rw.start <= t.start[0] <= rw.end
        and t.start[0] not in kept
        and t.string not in rw.text
    ]
    if not lost:
        return rw
    first = source_lines(source)[rw.start - 1]
    indent = first[: len(first) - len(first.lstrip())]
    above = "".join(f"{indent}{c}\n" for c in lost)
    return dataclasses.replace(
        rw,
        text=above + rw.text,
        checked=above + rw.checked if rw.checked else "",
        kept=tuple((old, new + len(lost)) for old, new in rw.kept),
    )


def chained(source: str, first: Rewrite, second: Rewrite) -> Rewrite | None:
    """``first``, then ``second`` (proposed for the text ``first`` left), as one rewrite of
    ``source``: the lines between the first and the last that differ, replaced. For a fix that
    uncovers the next break or recompile, verified whole. None where the two undo each other,
    where either selects between paths (its marked text and branch line are its own), or where
    either is a module-wide setting (what a setting uncovers is its own doing elsewhere: a
    setting that needs another edit to pass is not the fix)."""
    if first.selects or second.selects or first.branch or second.branch:
        return None
    if first.module_wide or second.module_wide:
        return None
    before = source_lines(source)
    after = source_lines(second.apply(first.apply(source)))
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(before), len(after)) - head
        and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]
    ):
        tail += 1
    if head == len(before) == len(after):
        return None
    start, end = head + 1, len(before) - tail
    if end < start and head == 0:  # lines inserted at the top: the first line kept after them
        start = end = 1
        text = "".join(after[: len(after) - tail + 1])
    elif end < start:  # lines inserted: the line before them replaced by itself and them
        start = end = head
        text = "".join(after[head - 1 : len(after) - tail])
    else:
        text = "".join(after[head : len(after) - tail])
    return dataclasses.replace(
        first,
        rule=f"{first.rule}+{second.rule}",
        title=f"{first.title}; then {second.title[0].lower()}{second.title[1:]}",
        start=start,
        end=end,
        text=text,
        exact=first.exact and second.exact,
        kept=(),
        branch=0,
        checked="",
        skips=(*first.skips, *second.skips),
        module_wide=first.module_wide or second.module_wide,
        selects=first.selects or second.selects,
        edits_calls=first.edits_calls or second.edits_calls,
        moves_boundary=first.moves_boundary or second.moves_boundary,
        boundary=first.boundary or second.boundary,
    )
