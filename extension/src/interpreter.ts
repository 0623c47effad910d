/**
 * Which Python runs the daemon: the `dynamoLens.interpreter` setting, else the Python extension's
 * active environment, else `python3` on PATH. Pure: no `vscode` (the Python extension is asked by
 * pythonExtension.ts and its answer is passed in).
 */

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface InterpreterInputs {
  /** The effective `dynamoLens.interpreter` value (VS Code already drops a workspace value in Restricted Mode). */
  setting?: string;
  /** File-system path of the first workspace folder, for `${workspaceFolder}` and relative paths. */
  workspaceFolder?: string;
  /** The Python extension's active environment executable, when that extension is installed. */
  pythonExtension?: string;
  /** VS Code workspace trust. */
  trusted: boolean;
  env?: NodeJS.ProcessEnv;
  home?: string;
  platform?: NodeJS.Platform;
}

export interface ResolvedInterpreter {
  command: string;
  source: InterpreterSource;
  /** Why this one, for the log and for messages ("from the dynamoLens.interpreter setting"). */
  reason: string;
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`; resolves relative paths. */
export function expandPath(
  value: string,
  opts: { workspaceFolder?: string; home?: string; env?: NodeJS.ProcessEnv },
): string {
  const home = opts.home ?? os.homedir();
  const env = opts.env ?? process.env;
  let out = value.trim();
  out = out.replace(/\$\{workspaceFolder\}/g, opts.workspaceFolder ?? '');
  out = out.replace(/\$\{userHome\}/g, home);
  out = out.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => env[name] ?? '');
  if (out === '~') out = home;
  else if (out.startsWith('~/')) out = path.join(home, out.slice(2));
  // A bare command name ("python3.11") is looked up on PATH; a relative path is relative to the workspace.
  if ((out.includes('/') || out.includes('\\')) && !path.isAbsolute(out) && opts.workspaceFolder) {
    out = path.resolve(opts.workspaceFolder, out);
  }
  return out;
}

function isInside(file: string, folder: string): boolean {
  if (!path.isAbsolute(file)) return false;
  const rel = path.relative(path.resolve(folder), path.resolve(file));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function defaultPythonCommand(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

export function resolveInterpreter(inputs: InterpreterInputs): ResolvedInterpreter {
  const setting = inputs.setting?.trim();
  if (setting) {
    const command = expandPath(setting, { workspaceFolder: inputs.workspaceFolder, home: inputs.home, env: inputs.env });
    // In Restricted Mode nothing inside the untrusted workspace runs, not even an interpreter the
    // user's own settings point into it (e.g. "${workspaceFolder}/.venv/bin/python").
    if (inputs.trusted || !inputs.workspaceFolder || !isInside(command, inputs.workspaceFolder)) {
      return { command, source: 'setting', reason: 'from the dynamoLens.interpreter setting' };
    }
    const fallback = defaultPythonCommand(inputs.platform);
    return {
      command: fallback,
      source: 'path',
      reason: `${fallback} on PATH (Restricted Mode: ${command} is inside the untrusted workspace)`,
    };
  }
  // In Restricted Mode an environment chosen by (or living in) the workspace is not run.
  if (inputs.pythonExtension && inputs.trusted) {
    return {
      command: inputs.pythonExtension,
      source: 'python-extension',
      reason: "the Python extension's active environment",
    };
  }
  const command = defaultPythonCommand(inputs.platform);
  return {
    command,
    source: 'path',
    reason:
      inputs.pythonExtension && !inputs.trusted
        ? `${command} on PATH (Restricted Mode: the Python extension's environment is not used)`
        : `${command} on PATH`,
  };
}

/** Finds a bare command on PATH (an absolute or relative path is checked as is). */
export function findExecutable(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const isExec = (p: string) => {
    try {
      const st = fs.statSync(p);
      if (!st.isFile()) return false;
      if (platform === 'win32') return true;
      fs.accessSync(p, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes('/') || command.includes('\\')) return isExec(command) ? command : undefined;
  const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
  const exts = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').concat(['']) : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, command + ext);
      if (isExec(candidate)) return candidate;
    }
  }
  return undefined;
}

/** Where the .vsix keeps the bundled daemon and libraries: `<extension>/extension/bundled`. */
export function bundledDir(extensionRoot: string): string {
  return path.join(extensionRoot, 'extension', 'bundled');
}

/** PYTHONPATH for the daemon: the bundled daemon and libraries first, then whatever was there. */
export function daemonPythonPath(
  bundled: string,
  existing: string | undefined,
  exists: (p: string) => boolean = fs.existsSync,
): string {
  const parts = [path.join(bundled, 'daemon'), path.join(bundled, 'libs')].filter(exists);
  if (existing) parts.push(...existing.split(path.delimiter).filter(Boolean));
  return parts.join(path.delimiter);
}

/** Environment for the daemon (and `doctor`). */
export function daemonEnv(bundled: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  const pythonPath = daemonPythonPath(bundled, base.PYTHONPATH);
  if (pythonPath) env.PYTHONPATH = pythonPath;
  else delete env.PYTHONPATH;
  env.PYTHONUNBUFFERED = '1';
  env.PYTHONIOENCODING = 'utf-8';
  return env;
}

/**
 * The daemon's working directory: never the workspace, so that `python -m` (which puts the working
 * directory first on sys.path) cannot pick up a workspace module named like one of ours.
 */
export function daemonCwd(bundled: string, fallback: string, exists: (p: string) => boolean = fs.existsSync): string {
  return exists(bundled) ? bundled : fallback;
}
