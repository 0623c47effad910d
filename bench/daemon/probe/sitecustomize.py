"""Bench probe (bench/daemon only): put this directory on PYTHONPATH and set
DL_BENCH_PROBE_DIR; every Python process started with that environment (the daemon and the
worker it spawns) writes ``<dir>/<pid>.json`` every 0.25 s and at exit: whether ``torch`` is in
``sys.modules``, how many ``torch*`` modules are loaded, and ``sys.argv``. Nothing else changes."""

import os

_DIR = os.environ.get("DL_BENCH_PROBE_DIR")
if _DIR:
    import atexit
    import json
    import sys
    import threading
    import time

    _PPID = os.getppid()  # at start: a child outliving its parent is reparented later

    def _snap() -> None:
        try:
            mods = list(sys.modules)
            data = {
                "pid": os.getpid(),
                "ppid": _PPID,
                "argv": list(getattr(sys, "argv", [])),
                "torch": "torch" in sys.modules,
                "torch_modules": sum(1 for m in mods if m == "torch" or m.startswith("torch.")),
                "modules": len(mods),
                "dynamo_lens": getattr(sys.modules.get("dynamo_lens"), "__file__", None),
                "time": time.time(),
            }
            tmp = os.path.join(_DIR, f"{os.getpid()}.json.tmp")
            with open(tmp, "w") as fh:
                json.dump(data, fh)
            os.replace(tmp, os.path.join(_DIR, f"{os.getpid()}.json"))
        except Exception:
            pass

    def _loop() -> None:
        while True:
            _snap()
            time.sleep(0.25)

    threading.Thread(target=_loop, name="dl-bench-probe", daemon=True).start()
    atexit.register(_snap)
