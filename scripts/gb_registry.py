"""Write the graph-break id table the worker falls back on when a user's torch is older.

torch ships ``torch/_dynamo/graph_break_registry.json`` (GBxxxx -> entries with ``Gb_type``);
older releases lack ids that newer ones have, and 2.8 words some breaks in pre-registry text.
Run this with the newest supported torch:

    .tools/compat/torch-2.15.0/bin/python scripts/gb_registry.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parents[1] / "daemon/dynamo_lens/texts/data/gb_registry.json"

# Breaks that torch < 2.9 reports in text written before the registry: a prefix of that text,
# and the id the registry gives the same break now (checked on torch 2.8.0).
LEGACY = {
    "logger not supported for non-export cases": "GB0291",
}


def main() -> int:
    src = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    data = json.loads(src.read_text())
    ids: dict[str, str] = {}
    for gb_id, entries in sorted(data.items()):
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and entry.get("Gb_type"):
                ids.setdefault(entry["Gb_type"], gb_id)
    table = {"torch": torch.__version__, "gb_type": ids, "legacy": LEGACY}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{OUT}: {len(ids)} break types from torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
