/**
 * The Python extension (ms-python.python), when installed: its active environment for a resource,
 * and an event when that changes. Optional: code-server ships without it.
 */

import * as vscode from 'vscode';

const PYTHON_EXTENSION_ID = 'ms-python.python';

interface EnvironmentPath {
  id: string;
  path: string;
}

interface ResolvedEnvironment {
  executable?: { uri?: vscode.Uri; path?: string };
  path?: string;
}

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): EnvironmentPath;
  resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

interface PythonExtensionApi {
  environments?: PythonEnvironmentsApi;
}

async function environmentsApi(log: vscode.LogOutputChannel): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments;
  } catch (e) {
    log.warn(`The Python extension did not activate: ${String(e)}`);
    return undefined;
  }
}

/** The active environment's interpreter for `resource`, or undefined (no extension, no environment). */
export async function pythonExtensionInterpreter(
  resource: vscode.Uri | undefined,
  log: vscode.LogOutputChannel,
): Promise<string | undefined> {
  const envs = await environmentsApi(log);
  if (!envs) return undefined;
  try {
    const active = envs.getActiveEnvironmentPath(resource);
    const resolved = await envs.resolveEnvironment(active);
    const exe = resolved?.executable?.uri?.fsPath ?? resolved?.executable?.path ?? resolved?.path;
    return exe || active.path || undefined;
  } catch (e) {
    log.warn(`Could not read the Python extension's active environment: ${String(e)}`);
    return undefined;
  }
}

export async function onDidChangePythonInterpreter(
  listener: () => void,
  log: vscode.LogOutputChannel,
): Promise<vscode.Disposable | undefined> {
  const envs = await environmentsApi(log);
  return envs?.onDidChangeActiveEnvironmentPath?.(() => listener());
}
