"""Break sites across a rewrite: the keys a break is compared by, the original's at their
lines in the rewritten file, and whether a break found in the rewrite is the one at the site
it was for (verify.py decides "break gone" and "no new break" with them)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from ..findings import Finding, Kind, SiteId
from ..fixes.catalogue import Rewrite


def break_keys(findings: list[Finding]) -> Counter[SiteId]:
    """Breaks, and frames torch then runs eagerly (a break in a loop): a rewrite that turns a
    break into a skipped frame has not removed it."""
    return Counter(
        (os.path.realpath(f.path), *f.site[1:])
        for f in findings
        if f.kind in (Kind.GRAPH_BREAK, Kind.FALLBACK)
    )


def at_site(f: Finding, site: SiteId, rewrite: Rewrite) -> bool:
    """Whether ``f`` (found in the rewritten code) is the break at ``site``: on the rewritten
    lines, or where the site's line moved to (a rewrite elsewhere in the file, such as a
    setting after the imports, leaves the site's line in place)."""
    if os.path.realpath(f.path) != os.path.realpath(site[0]):
        return False
    if f.site[2] != site[2]:
        return False
    kept = {new for _, new in rewrite.kept}  # lines the rewrite copies: their breaks are theirs
    if rewrite.start <= f.line < rewrite.start + rewrite.text.count("\n") and f.line not in kept:
        return True
    same_file = os.path.realpath(site[0]) == os.path.realpath(rewrite.path)
    return f.line == (rewrite.new_line(site[1]) if same_file else site[1])


def moved_to_rewrite(keys: Counter[SiteId], rewrite: Rewrite, edited: Path) -> Counter[SiteId]:
    """The original's break keys at their lines in the rewritten file."""
    out: Counter[SiteId] = Counter()
    for (p, line, gb), n in keys.items():
        new = rewrite.new_line(line) if p == os.path.realpath(edited) else line
        if new is not None:
            out[(p, new, gb)] += n
    return out
