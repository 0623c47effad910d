/**
 * The palette commands other than the benchmark: check file, check workspace, clear cache.
 */

import * as vscode from 'vscode';
import { DaemonNotRunningError, type Daemon } from './daemon';
import { plural } from './words';

/** Runs `fn`; a daemon that is not running or a failed request becomes a message with "Show logs". */
export async function reportErrors(log: vscode.LogOutputChannel, what: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    const msg =
      e instanceof DaemonNotRunningError
        ? `Dynamo Lens: cannot ${what}: the daemon is not running.`
        : `Dynamo Lens: ${what} failed: ${e instanceof Error ? e.message : String(e)}`;
    log.error(msg);
    const choice = await vscode.window.showErrorMessage(msg, 'Show logs', 'Restart daemon');
    if (choice === 'Show logs') log.show();
    if (choice === 'Restart daemon') void vscode.commands.executeCommand('dynamoLens.restart');
  }
}

export async function checkFile(daemon: Daemon, uri?: vscode.Uri): Promise<void> {
  const doc = uri ? undefined : vscode.window.activeTextEditor?.document;
  const target = uri ?? doc?.uri;
  if (!target || (doc && doc.languageId !== 'python')) {
    void vscode.window.showInformationMessage('Dynamo Lens: open a Python file to check it.');
    return;
  }
  if (doc?.isDirty) await doc.save();
  const name = vscode.workspace.asRelativePath(target);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Dynamo Lens: checking ${name}`, cancellable: true },
    (_p, token) => daemon.executeCommand('checkFile', [target.toString()], token),
  );
  if (result) {
    void vscode.window.showInformationMessage(
      `Dynamo Lens: ${name}: ${plural(result.targets ?? 0, 'target')}, ${plural(result.findings ?? 0, 'finding')}.`,
    );
  }
}

export async function checkWorkspace(daemon: Daemon): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Dynamo Lens: checking the workspace', cancellable: true },
    (_p, token) => daemon.executeCommand('checkWorkspace', [], token),
  );
  if (result) {
    void vscode.window.showInformationMessage(
      `Dynamo Lens: checked ${plural(result.files ?? 0, 'file')}: ${plural(result.findings ?? 0, 'finding')}.`,
    );
  }
}

export async function clearCache(daemon: Daemon): Promise<void> {
  const result = await daemon.executeCommand('clearCache', []);
  void vscode.window.showInformationMessage(`Dynamo Lens: cleared ${plural(result?.removed ?? 0, 'cache entry', 'cache entries')}.`);
}
