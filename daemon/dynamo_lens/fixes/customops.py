"""What the rules that call a custom op share: the op's definition goes once into the file,
after its imports, and the edit at the site joins it in one rewrite (the lines between kept).
A custom op is torch's way to run Python where the graph runs: Dynamo does not trace into it,
and registered as an ordered effect it stays in the graph though it returns nothing.
Torch-free."""

from __future__ import annotations

import ast
import io
import tokenize

from .rewrite import Rewrite, imports_torch, source_lines, spacing_after
from .settings import header_imports


def definition(op: str, signature: str, body: str, binding: str) -> str:
    """The text that defines ``dynamo_lens::<op>`` (``signature``: its parameters, typed;
    ``body``: its lines, indented for a function) where the process has none yet, and binds it to
    ``binding``. Defined once per process: a second definition, once collected, would take the
    first one's kernel with it (a file imported twice, a reload)."""
    params = ", ".join(p.split(":")[0].strip() for p in signature.split(","))
    return f'''

# Added by Dynamo Lens: a custom op, which torch.compile keeps in its graph without tracing into
# it: its Python runs where the graph runs, on the real values.
if not hasattr(torch.ops.dynamo_lens, "{op}"):

    @torch.library.custom_op("dynamo_lens::{op}", mutates_args=())
    def _define_{op}({signature}) -> None:
{body}
    _define_{op}.register_fake(lambda {params}: None)
    # An op that returns nothing stays in a compiled graph as an ordered effect only.
    from torch._higher_order_ops.effects import _EffectType, _register_effectful_op

    _register_effectful_op(torch.ops.dynamo_lens.{op}.default, _EffectType.ORDERED)
{binding} = torch.ops.dynamo_lens.{op}
'''


def with_op(
    rule: str,
    title: str,
    path: str,
    source: str,
    tree: ast.Module,
    start: int,
    end: int,
    site: str,
    helper: str,
    binding: str,
    *,
    branch: int = 0,
) -> Rewrite | None:
    """Lines ``start``..``end`` replaced by ``site``, and ``helper`` (``definition``'s text)
    after the imports where the file does not bind ``binding`` to the op yet."""
    site = _with_site_comments(source, start, end, site)
    bound = helper.strip().splitlines()[-1]
    if bound in source:
        return Rewrite(rule, title, path, start, end, site, exact=True, branch=branch)
    head = header_imports(tree)
    last = (head[-1].end_lineno or head[-1].lineno) if head else 0
    if not head or last >= start or not imports_torch(ast.Module(body=list(head), type_ignores=[])):
        return None  # the op needs ``torch`` where it is defined: after ``import torch``
    lines = source_lines(source)
    text = lines[last - 1] if lines[last - 1].endswith("\n") else lines[last - 1] + "\n"
    text += helper + spacing_after(lines, last, start)
    kept = []
    for old in range(last + 1, start):  # the lines between, as they were
        kept.append((old, last + text.count("\n")))
        text += lines[old - 1]
    return Rewrite(
        rule,
        title,
        path,
        last,
        end,
        text + site,
        exact=True,
        kept=tuple(kept),
        branch=branch,
    )


def _with_site_comments(source: str, start: int, end: int, site: str) -> str:
    """``site`` with the comments of the lines it replaces that it does not carry, on lines of
    their own above it (else they would go above the whole rewrite: after the imports)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return site
    lost = [
        t.string
        for t in tokens
        if t.type == tokenize.COMMENT and start <= t.start[0] <= end and t.string not in site
    ]
    indent = site[: len(site) - len(site.lstrip())]
    return "".join(f"{indent}{c}\n" for c in lost) + site
