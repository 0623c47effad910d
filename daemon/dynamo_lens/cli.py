"""``dynamo-lens``: ``check`` files or folders (for CI and code scanning), ``run`` a command
with torch's structured trace on and report what it saw, ``trace`` the logs of a run made
elsewhere, ``doctor`` the interpreter, ``serve`` the language server."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cliargs import FIX_CHECKS, checks_arg, fix_checks_arg, fix_checks_of
from .cmdpaths import find_root, is_notebook, mixed_projects, not_python, say_cells, say_skipped
from .config import ALL_CHECKS, Config, load
from .engine.analysis import Engine
from .findings import FileResult, Severity
from .report.baseline import unwritable
from .texts.source import iter_python_files
from .version import __version__

if TYPE_CHECKING:
    from .report.baseline import Known

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dynamo-lens", description=__doc__)
    p.add_argument("--version", action="version", version=f"dynamo-lens {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="analyse files or folders and print findings")
    c.add_argument("paths", nargs="+", type=Path)
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument(
        "--checks",
        type=checks_arg,
        default=None,
        help=f"comma list of {', '.join(ALL_CHECKS)} (default: all)",
    )
    c.add_argument(
        "--device",
        action="append",
        dest="devices",
        default=None,
        help="cpu, cuda, cuda:N or auto (repeatable; default: cpu and every CUDA device)",
    )
    c.add_argument("--timeout", type=float, default=None, help="seconds per target")
    c.add_argument("--backend", default=None, help="torch.compile backend (default inductor)")
    c.add_argument(
        "--root",
        type=Path,
        default=None,
        help="workspace root (default: nearest folder with a pyproject.toml)",
    )
    c.add_argument("--output", "-o", type=Path, default=None, help="write the report here")
    c.add_argument(
        "--fixes",
        choices=("none", "propose", "verify"),
        default="none",
        help="give each graph break its rewrites (data.fixes, SARIF fixes): as proposed, or "
        "verified by running them (break gone, outputs equal, no new recompile)",
    )
    c.add_argument("--verbose", "-v", action="store_true", help="explanations, hints, call chains")
    _baseline_options(c)
    for name, what in (
        ("run", "run a command with torch's structured trace on, then report what it saw"),
        ("trace", "report what torch's structured trace logs (TORCH_TRACE=dir) saw"),
    ):
        r = sub.add_parser(name, help=what)
        if name == "run":
            r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
        else:
            r.add_argument("paths", nargs="+", type=Path, help="trace folders or log files")
        r.add_argument("--format", choices=("text", "json", "sarif"), default="text")
        r.add_argument("--output", "-o", type=Path, default=None)
        r.add_argument("--workspace", type=Path, default=None, help="default: this folder")
        r.add_argument(
            "--path-map",
            action="append",
            default=None,
            metavar="REMOTE=LOCAL",
            help="paths recorded on another machine (repeatable)",
        )
        r.add_argument("--verbose", "-v", action="store_true")
        _baseline_options(r)
    g = sub.add_parser(
        "diff", help="new, gone and unchanged findings between two reports or trace folders"
    )
    g.add_argument("old", type=Path, help="a JSON report (--format json) or a trace folder")
    g.add_argument("new", type=Path, help="a JSON report (--format json) or a trace folder")
    g.add_argument("--format", choices=("text", "json"), default="text")
    g.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="where the files are, for reports without fingerprints and trace folders "
        "(default: this folder)",
    )
    x = sub.add_parser(
        "fix", help="propose rewrites that remove graph breaks, each verified by running it"
    )
    x.add_argument("paths", nargs="+", type=Path)
    x.add_argument("--apply", action="store_true", help="write the verified rewrites")
    x.add_argument("--format", choices=("text", "json"), default="text")
    x.add_argument("--root", type=Path, default=None, help="workspace root")
    x.add_argument("--backend", default=None, help="torch.compile backend (default inductor)")
    x.add_argument("--timeout", type=float, default=None, help="seconds per target")
    x.add_argument(
        "--checks",
        type=fix_checks_arg,
        default=None,
        help=f"comma list of what to fix: {', '.join(FIX_CHECKS)} (default: the workspace's)",
    )
    x.add_argument("--verbose", "-v", action="store_true")
    s = sub.add_parser("serve", help="run the language server (stdio)")
    s.add_argument("--tcp", default=None, metavar="127.0.0.1:PORT", help="debugging only")
    d = sub.add_parser("doctor", help="say whether this interpreter can run the worker")
    d.add_argument("--json", action="store_true")
    return p


def _baseline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="FILE",
        help="accepted findings: they are marked known and only new ones fail "
        "(default: baseline in [tool.dynamo-lens])",
    )
    p.add_argument(
        "--write-baseline",
        type=Path,
        default=None,
        metavar="FILE",
        help="write this run's findings as the baseline and exit 0",
    )
    p.add_argument(
        "--fail-on",
        choices=[s.value for s in Severity],
        default=Severity.WARNING.value,
        help="the lowest severity that fails (default warning; static hints are information)",
    )


def _doctor(as_json: bool) -> int:
    import importlib.util

    info: dict[str, Any] = {"python": sys.executable, "version": platform.python_version()}
    missing = [m for m in ("torch", "msgpack") if importlib.util.find_spec(m) is None]
    info["missing"] = missing
    info["torch"] = None
    if "torch" not in missing:
        from importlib.metadata import PackageNotFoundError, version

        try:
            info["torch"] = version("torch")
        except PackageNotFoundError:
            info["torch"] = "unknown"
    if as_json:
        print(json.dumps(info))
    else:
        print(f"python {info['version']} at {info['python']}")
        print(f"torch {info['torch'] or 'MISSING'}")
        if missing:
            print(f"missing: {', '.join(missing)}")
    return EXIT_CLEAN


def _settings(root: Path, overrides: dict[str, Any], paths: Sequence[Path]) -> Config | None:
    """The workspace's settings with the command line's on top, problems said on stderr; None
    (after saying so) when a path given does not exist."""
    cfg, problems = load(root, overrides)
    for prob in problems:
        print(f"dynamo-lens: {prob}", file=sys.stderr)
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"dynamo-lens: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return None
    return cfg


def _check(args: argparse.Namespace) -> int:
    if (problem := not_python(args.paths, notebooks=True)) or (
        args.root is None and (problem := mixed_projects(args.paths))
    ):
        print(f"dynamo-lens: {problem}", file=sys.stderr)
        return EXIT_ERROR
    root = (args.root or find_root(args.paths)).resolve()
    overrides: dict[str, Any] = {}
    dynamic_checks = None
    if args.checks is not None:
        dynamic_checks = [c for c in args.checks if c in ALL_CHECKS]
        if dynamic_checks:
            overrides["checks"] = dynamic_checks
    if args.devices:
        overrides["devices"] = args.devices
    if args.timeout is not None:
        overrides["timeout"] = args.timeout
    if args.backend:
        overrides["backend"] = args.backend
    cfg = _settings(root, overrides, args.paths)
    if cfg is None:
        return EXIT_ERROR
    if args.output is not None and (problem := unwritable(args.output)):
        # Checked before the run: a long analysis must not end in a traceback and lose it all.
        print(f"dynamo-lens: cannot write the report to {args.output}: {problem}", file=sys.stderr)
        return EXIT_ERROR
    ok, known = _gate(args, root, cfg.baseline)
    if not ok:
        return EXIT_ERROR
    books: list[Path] = []
    files = list(dict.fromkeys([*iter_python_files(args.paths, cfg.excludes, books), *books]))
    log = (lambda m: print(f"dynamo-lens: {m}", file=sys.stderr)) if args.verbose else None
    results: list[FileResult] = []
    env: dict[str, Any] = {"config": cfg.fingerprint()}
    with Engine(root, cfg, on_log=log) as engine:
        for f in files:
            if is_notebook(f):
                from .runs.notebook import check_notebook

                results.append(check_notebook(engine, f, args.checks))
                say_cells(results[-1], root)
                continue
            results.append(engine.analyze_file(f, args.checks))
            if args.fixes != "none":
                from .engine.fixing import attach

                attach(engine, results[-1], verify=args.fixes == "verify")
        if any(r.ran for r in results):
            env.update(engine.environment())
    return _emit(results, root, env, args, known)


def _gate(args: Any, root: Path, configured: str) -> tuple[bool, Known | None]:
    """Before a long run: (ok, the baseline's fingerprints or None). Not ok (said on stderr)
    when the baseline cannot be read or the one to write cannot be written."""
    from .report.baseline import BaselineError, read

    if args.write_baseline is not None and args.baseline is not None:
        print(
            "dynamo-lens: --baseline and --write-baseline together: check against one, or "
            "write one",
            file=sys.stderr,
        )
        return False, None
    if args.write_baseline is not None:
        if args.output is not None and os.path.realpath(args.output) == os.path.realpath(
            args.write_baseline
        ):
            print("dynamo-lens: the report (-o) and the baseline are one file", file=sys.stderr)
            return False, None
        if problem := unwritable(args.write_baseline):
            print(
                f"dynamo-lens: cannot write the baseline {args.write_baseline}: {problem}",
                file=sys.stderr,
            )
            return False, None
        return True, None
    path = args.baseline or ((root / configured) if configured else None)
    if path is None:
        return True, None
    try:
        return True, read(path)
    except BaselineError as exc:
        print(f"dynamo-lens: {exc}", file=sys.stderr)
        return False, None


def _emit(
    results: list[FileResult],
    root: Path,
    env: dict[str, Any],
    args: Any,
    known: Known | None = None,
) -> int:
    """Render ``results`` as ``check`` does (text, JSON, SARIF) and give its exit status:
    against a baseline (``known``), only new findings count."""
    from .report import baseline, fingerprint

    findings = [f for r in results for f in r.all_findings()]
    fingerprint.assign(findings, root)
    if args.write_baseline is not None:
        try:
            n = baseline.write(args.write_baseline, findings, root)
        except baseline.BaselineError as exc:
            print(f"dynamo-lens: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(
            f"dynamo-lens: wrote the baseline {args.write_baseline}: {n} finding(s)",
            file=sys.stderr,
        )
    elif known is not None:
        baseline.mark(findings, known, root)
    if args.format == "json":
        from .report import jsonout

        text = jsonout.render(results, env)
    elif args.format == "sarif":
        from .report import sarif

        text = sarif.render(results, root)
    else:
        from .report import text as textout

        text = textout.render(results, root, verbose=args.verbose)
    if args.output:
        args.output.write_text(text + "\n")
    else:
        print(text)
    if args.write_baseline is not None:
        return EXIT_CLEAN
    # Without a baseline every finding is new (baseline.failing counts those not "known").
    return EXIT_FINDINGS if baseline.failing(findings, Severity(args.fail_on)) else EXIT_CLEAN


def _fix(args: argparse.Namespace) -> int:
    """``fix``: each break's rewrite and its verdict; ``--apply`` writes the ones verified for
    every path, one at a time, analysing the file again after each (a verdict holds for the
    text it was for), under the workspace's lock. Exit 0, 1 when a file could not be analysed
    (as ``check``), 2 when something was not written (or on usage and internal errors)."""
    from .engine.filewrite import workspace_lock
    from .engine.fixing import Fix, apply_verified, fixes_for
    from .findings import Kind
    from .report import fixout

    if problem := not_python(args.paths):
        print(f"dynamo-lens: {problem}", file=sys.stderr)
        return EXIT_ERROR
    root = (args.root or find_root(args.paths)).resolve()
    overrides: dict[str, Any] = {"checks": list(args.checks)} if args.checks else {}
    if args.backend:
        overrides["backend"] = args.backend
    if args.timeout is not None:
        overrides["timeout"] = args.timeout
    cfg = _settings(root, overrides, args.paths)
    if cfg is None:
        return EXIT_ERROR
    try:
        args.checks = args.checks or fix_checks_of(cfg.checks)
    except ValueError as exc:
        print(f"dynamo-lens: {exc}", file=sys.stderr)
        return EXIT_ERROR
    cfg = replace(cfg, checks=list(args.checks))
    log = (lambda m: print(f"dynamo-lens: {m}", file=sys.stderr)) if args.verbose else None
    report: list[Fix] = []
    applied: list[Fix] = []
    errors: list[str] = []
    problems: list[Any] = []

    def wrote(fix: Fix) -> None:
        # Said as it happens: a run killed later has still told what it changed.
        applied.append(fix)
        d = fixout.fix_dict(fix, root)
        print(
            f"dynamo-lens: wrote {d['path']}: {d['rule']} at line {d['line']}",
            file=sys.stderr,
            flush=True,
        )

    skipped: list[Path] = []
    files = list(dict.fromkeys(iter_python_files(args.paths, cfg.excludes, skipped)))
    say_skipped(skipped)
    lock = (
        workspace_lock(root, lambda: print(_WAITING, file=sys.stderr, flush=True))
        if args.apply
        else contextlib.nullcontext()
    )
    # SIGTERM as Ctrl-C: the run stops between two files' writes and says what it changed.
    previous = signal.signal(signal.SIGTERM, _interrupt) if args.apply else None
    try:
        with lock, Engine(root, cfg, on_log=log) as engine:
            for f in files:
                if args.apply and not engine.workspace.contains(os.path.realpath(f)):
                    errors.append(f"{f} is outside the workspace {root}: not changed")
                    continue
                if args.apply:
                    done = apply_verified(engine, str(f), checks=args.checks, on_write=wrote)
                    report += done.left
                    errors += done.errors
                    problems += done.problems
                else:
                    result = engine.analyze_file(f, list(args.checks))
                    problems += [x for x in result.all_findings() if x.kind is Kind.ERROR]
                    if not any(x.kind is Kind.ERROR for x in result.all_findings()):
                        report += fixes_for(engine, result)
    except KeyboardInterrupt:
        names = ", ".join(dict.fromkeys(fixout.fix_dict(x, root)["path"] for x in applied))
        print(
            f"dynamo-lens: interrupted; changed so far: {names or 'nothing'} (each file is "
            "either as it was or wholly rewritten)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    for e in errors:
        print(f"dynamo-lens: {e}", file=sys.stderr)
    if args.format == "json":
        from .findings import to_wire

        doc = {
            "fixes": [fixout.fix_dict(x, root) for x in report],
            "applied": [fixout.fix_dict(x, root) for x in applied],
            "errors": errors,
            "problems": to_wire(problems),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(fixout.render(report, applied, problems, root))
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if problems else EXIT_CLEAN


_WAITING = "dynamo-lens: another fix --apply is writing in this workspace; waiting for it"


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _runs(args: argparse.Namespace) -> int:
    """``trace`` and ``run``: findings from torch's structured trace of a real run."""
    from .runs.command import TracedRun, report_environment, summary_text, trace_results
    from .runs.tracelog import printable

    root = (args.workspace or Path.cwd()).resolve()
    if args.output is not None and (problem := unwritable(args.output)):
        print(f"dynamo-lens: cannot write the report to {args.output}: {problem}", file=sys.stderr)
        return EXIT_ERROR
    ok, known = _gate(args, root, load(root)[0].baseline)
    if not ok:
        return EXIT_ERROR
    maps = []
    for m in args.path_map or []:
        remote, sep, local = m.partition("=")
        if not sep or not remote or not local:
            print(f"dynamo-lens: --path-map wants REMOTE=LOCAL, got {m!r}", file=sys.stderr)
            return EXIT_ERROR
        maps.append((remote, str(Path(local).resolve())))
    if args.command == "run":
        # Only the `--` that ends our options goes: the command's own arguments are its own.
        cmd = list(args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd or [])
        if not cmd:
            print("dynamo-lens: run wants a command after --", file=sys.stderr)
            return EXIT_ERROR
        traced = TracedRun(cmd, root)
        code = traced.wait()
        paths, provenance = [traced.trace_dir], traced.provenance
    else:
        paths, code = list(args.paths), 0
        provenance = "trace " + " ".join(printable(p) for p in args.paths)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            print(f"dynamo-lens: no such file or folder: {', '.join(missing)}", file=sys.stderr)
            return EXIT_ERROR
    run = trace_results(paths, root, maps, provenance)
    if args.command == "run" and not run.torch:
        # torch 2.8 records no version in its trace: the command's interpreter says.
        run = replace(run, torch=traced.torch_version())
    if run.outside:
        print(
            f"dynamo-lens: {run.outside} record(s) name no file under {root}: they are shown "
            "at the paths the trace names; run from the checkout the run used, or pass "
            "--workspace DIR or --path-map REMOTE=LOCAL to map them",
            file=sys.stderr,
        )
    if run.skipped:
        print(f"dynamo-lens: skipped {run.skipped} unreadable trace line(s)", file=sys.stderr)
    if code:
        print(
            f"dynamo-lens: {_how_it_ended(code)}: what it ran until then is reported, and "
            "this run fails",
            file=sys.stderr,
        )
    if args.command == "run":
        # Kept: tlparse and a later `dynamo-lens trace` read the same folder.
        print(f"dynamo-lens: torch's trace of the run is in {paths[0]}", file=sys.stderr)
    if code and args.write_baseline is not None:
        print(
            f"dynamo-lens: {_how_it_ended(code)}: no baseline written (it would miss what the "
            "command did not run)",
            file=sys.stderr,
        )
        args.write_baseline = None
    status = _emit(run.results, root, report_environment(run, code), args, known)
    if args.format == "text" and (table := summary_text(run, root)):
        print(table)
    # A command that failed or was killed ran only part of what it should: its findings are
    # incomplete, so CI must not read the run as clean.
    return EXIT_ERROR if code else status


def _diff(args: argparse.Namespace) -> int:
    """``diff OLD NEW``: exit 1 when NEW has a finding OLD has not, 2 when a side is unreadable."""
    from .report import diff

    root = (args.workspace or Path.cwd()).resolve()
    sides = []
    for path in (args.old, args.new):
        try:
            if path.is_dir() or path.name.endswith((".log", ".log.gz")):
                from .runs.command import trace_results

                run = trace_results([path], root, [], f"trace {path}")
                if not run.files:
                    raise diff.DiffError(f"no torch trace log in {path}")
                found = [f for r in run.results for f in r.all_findings()]
            else:
                found = diff.read_report(path)
        except diff.DiffError as exc:
            print(f"dynamo-lens: {exc}", file=sys.stderr)
            return EXIT_ERROR
        sides.append(diff.fingerprinted(found, root))
    d = diff.compare(*sides)
    if args.format == "json":
        print(json.dumps(diff.document(d), indent=2))
    else:
        print(diff.text(d, root))
    return EXIT_FINDINGS if d.new else EXIT_CLEAN


def _how_it_ended(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the command was killed by {name}"
    return f"the command exited with code {code}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        if args.command == "doctor":
            return _doctor(args.json)
        if args.command == "serve":
            from .server.lsp import serve

            serve(args.tcp)
            return EXIT_CLEAN
        if args.command in ("run", "trace"):
            return _runs(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "fix":
            return _fix(args)
        return _check(args)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:  # a bug of ours: a clear line and the error status, not a 1
        print(f"dynamo-lens: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("DYNAMO_LENS_DEBUG"):
            raise
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
