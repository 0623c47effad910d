/**
 * The Python extension (ms-python.python), when installed: its active environment for a resource,
 * and an event when that changes. Optional: code-server ships without it. Typed by
 * `@vscode/python-extension`, the Python extension's own API package.
 */

import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';

async function environmentsApi(log: vscode.LogOutputChannel): Promise<PythonExtension['environments'] | undefined> {
  if (!vscode.extensions.getExtension('ms-python.python')) return undefined; // not installed: no message
  try {
    return (await PythonExtension.api()).environments;
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
    return resolved?.executable.uri?.fsPath || active.path || undefined;
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
  return envs?.onDidChangeActiveEnvironmentPath(() => listener());
}
