"""Record torch's structured trace of each script in src/ with one torch: the fixtures that let
the unit tier test ``runs/`` (the trace reader) without torch, on every torch we support.

    PYTHON=.tools/compat/torch-2.8.0/bin/python python tests/golden/traces/record.py

Each script runs as a user would (``TORCH_TRACE=<dir> python <script>``) from one fixed folder,
``/tmp/dynamo-lens-golden/ws``, so that the recorded paths are the same on every machine: the
tests map that folder onto a copy of src/ (``--path-map``). The log lands in
``torch-<version>/<script>.log.gz`` and the command in RECORDED.md. Then update the goldens:
``.venv/bin/python -m pytest tests/unit/test_golden.py --update-golden``.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WS = Path("/tmp/dynamo-lens-golden/ws")


def main() -> int:
    python = os.path.abspath(os.environ.get("PYTHON", sys.executable))
    version = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__.split('+')[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    out = HERE / f"torch-{version}"
    out.mkdir(exist_ok=True)
    shutil.rmtree(WS, ignore_errors=True)
    shutil.copytree(HERE / "src", WS)
    lines = []
    for script in sorted((HERE / "src").glob("*.py")):
        trace = Path(tempfile.mkdtemp(prefix="dynamo-lens-golden-trace-"))
        env = {**os.environ, "TORCH_TRACE": str(trace), "PYTHONHASHSEED": "0"}
        subprocess.run([python, script.name], cwd=WS, env=env, check=True, capture_output=True)
        (log,) = sorted(trace.glob("*.log"))
        # Compressed (the reader takes .log.gz as users' archived traces): a tenth the size.
        with (
            log.open("rb") as src,
            gzip.GzipFile(out / f"{script.stem}.log.gz", "wb", mtime=0) as dst,
        ):
            shutil.copyfileobj(src, dst)
        shutil.rmtree(trace)
        lines.append(
            f"- `torch-{version}/{script.stem}.log.gz`: `cd {WS} && TORCH_TRACE=<dir> "
            f"python {script.name}` with torch {version} "
            f"(`{os.path.relpath(python, HERE.parents[2])}`)"
        )
    recorded = HERE / "RECORDED.md"
    old = recorded.read_text().splitlines() if recorded.exists() else ["# Recorded traces", ""]
    keep = [ln for ln in old if not ln.startswith(f"- `torch-{version}/")]
    recorded.write_text("\n".join([*keep, *lines]) + "\n")
    print(f"recorded {len(lines)} trace(s) with torch {version} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
