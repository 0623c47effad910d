/**
 * "Run File with Analysis", "Load Torch Trace…" and "Clear Run Findings": findings from the
 * user's real runs. The daemon runs the command (TORCH_TRACE set) and reads the trace; the
 * findings arrive as diagnostics, the distinct-break summary in the tree view.
 */

import * as vscode from 'vscode';
import type { Daemon } from './daemon';
import type { LoadTraceResult, RunFileResult } from './protocol';
import type { RunSummaryView } from './runSummaryView';
import { withServerProgress } from './serverProgress';
import { plural } from './words';

function loaded(r: LoadTraceResult): string {
  const skipped = r.skipped ? `; ${plural(r.skipped, 'unreadable trace line')} skipped` : '';
  return `${plural(r.findings, 'finding')} in ${plural(r.files, 'file')}${skipped}`;
}

export async function runFile(daemon: Daemon, log: vscode.LogOutputChannel, view: RunSummaryView, arg?: vscode.Uri): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showInformationMessage('Dynamo Lens: running a file runs its code: trust the workspace first.');
    return;
  }
  const doc = arg ? undefined : vscode.window.activeTextEditor?.document;
  const uri = arg ?? (doc?.languageId === 'python' ? doc.uri : undefined);
  const command = vscode.workspace.getConfiguration('dynamoLens', uri).get<string>('runCommand')?.trim() || undefined;
  if (!uri && !command) {
    void vscode.window.showInformationMessage('Dynamo Lens: open a Python file to run it, or set dynamoLens.runCommand.');
    return;
  }
  if (doc?.isDirty) await doc.save();
  const what = command ?? vscode.workspace.asRelativePath(uri!);
  log.info(`Run with analysis: ${what}`);
  const result = await withServerProgress<RunFileResult>(daemon, log, 'Run', `Dynamo Lens: running ${what}`, (workDoneToken) =>
    daemon.executeCommand('runFile', [{ uri: uri?.toString(), command }], undefined, workDoneToken),
  );
  await view.refresh();
  if (result === 'cancelled') {
    void vscode.window.showInformationMessage('Dynamo Lens: run cancelled; what ran until then is shown.');
    return;
  }
  await view.reveal();
  const ended = result.exitCode ? `the command exited with code ${result.exitCode}; ` : '';
  const show = result.exitCode ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  void show(`Dynamo Lens: ${ended}${loaded(result)} from the run.`, 'Show output').then((c) => {
    if (c) log.show();
  });
}

export async function loadTrace(daemon: Daemon, view: RunSummaryView, arg?: vscode.Uri): Promise<void> {
  const picked =
    arg ??
    (
      await vscode.window.showOpenDialog({
        title: 'Dynamo Lens: Load Torch Trace (a TORCH_TRACE folder, or its logs)',
        canSelectFolders: true,
        canSelectFiles: true,
        canSelectMany: false,
        openLabel: 'Load trace',
      })
    )?.[0];
  if (!picked) return;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Dynamo Lens: reading ${picked.fsPath}` },
    () => daemon.executeCommand('loadTrace', [picked.fsPath]),
  );
  await view.refresh();
  await view.reveal();
  void vscode.window.showInformationMessage(`Dynamo Lens: ${loaded(result)} from the trace.`);
}

export async function clearRun(daemon: Daemon, view: RunSummaryView): Promise<void> {
  const result = await daemon.executeCommand('clearRun', []);
  await view.refresh();
  void vscode.window.showInformationMessage(`Dynamo Lens: cleared the last run's findings (${plural(result.files, 'file')}).`);
}
