/**
 * Dynamo Lens: activation. Wires the daemon, the palette commands, the status item, settings
 * changes and workspace trust together.
 */

import * as vscode from 'vscode';
import { BenchmarkPanel, benchmarkArgs, benchmarkTarget } from './benchmark';
import { checkFile, checkWorkspace, clearCache, reportErrors } from './commands';
import { Daemon } from './daemon';
import { onDidChangePythonInterpreter } from './pythonExtension';
import { clearRun, loadTrace, runFile } from './runs';
import { RunSummaryView } from './runSummaryView';
import { needsRestart } from './settings';
import { StatusController } from './statusView';

/** Set by the bundle's first line (esbuild banner); module evaluation time otherwise. */
const loadStart = (globalThis as { __dynamoLensLoadStart?: number }).__dynamoLensLoadStart ?? Date.now();
const loadedAt = Date.now();
let daemon: Daemon | undefined;

export interface DynamoLensApi {
  /** Milliseconds from the first line of the bundle running to activate() returning. */
  activationMs: number;
  daemon: Daemon;
}

export function activate(context: vscode.ExtensionContext): DynamoLensApi {
  const t0 = Date.now();
  const log = vscode.window.createOutputChannel('Dynamo Lens', { log: true });
  const status = new StatusController();
  const d = new Daemon(context, log, status);
  daemon = d;
  const panel = new BenchmarkPanel(log);
  context.subscriptions.push(log, status);

  const register = (id: string, fn: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  register('dynamoLens.showLogs', () => log.show());
  register('dynamoLens.restart', () => d.restart('the Restart daemon command'));
  register('dynamoLens.benchmarkTarget', (first, second) =>
    reportErrors(log, 'benchmark', () => benchmarkTarget(d, panel, log, benchmarkArgs(first, second))),
  );
  register('dynamoLens.checkFile', (arg) =>
    reportErrors(log, 'check the file', () =>
      checkFile(d, arg instanceof vscode.Uri ? arg : typeof arg === 'string' ? vscode.Uri.parse(arg) : undefined),
    ),
  );
  register('dynamoLens.checkWorkspace', () => reportErrors(log, 'check the workspace', () => checkWorkspace(d)));
  register('dynamoLens.clearCache', () => reportErrors(log, 'clear the cache', () => clearCache(d)));
  const runView = new RunSummaryView(d, log);
  context.subscriptions.push(runView, d.onDidStart(() => void runView.refresh()));
  const uriArg = (arg: unknown) => (arg instanceof vscode.Uri ? arg : undefined);
  register('dynamoLens.runFile', (arg) => reportErrors(log, 'run with analysis', () => runFile(d, log, runView, uriArg(arg))));
  register('dynamoLens.loadTrace', (arg) => reportErrors(log, 'load the trace', () => loadTrace(d, runView, uriArg(arg))));
  register('dynamoLens.clearRun', () => reportErrors(log, 'clear the run', () => clearRun(d, runView)));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('dynamoLens')) return;
      if (needsRestart((s) => e.affectsConfiguration(s))) {
        void d.restart('dynamoLens.interpreter changed');
      } else {
        void d.pushSettings().catch((err: unknown) => log.warn(`Sending settings: ${String(err)}`));
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      void d.restart('the workspace is now trusted');
    }),
    { dispose: () => void d.dispose() },
  );
  void onDidChangePythonInterpreter(() => {
    const setting = vscode.workspace.getConfiguration('dynamoLens').get<string>('interpreter');
    if (!setting?.trim()) void d.restart("the Python extension's active environment changed");
  }, log).then((sub) => sub && context.subscriptions.push(sub));

  void d.restart('activation');
  const activationMs = Date.now() - loadStart;
  log.info(
    `Dynamo Lens ${String((context.extension.packageJSON as { version?: string }).version)} activated in ${activationMs} ms (activate() ${Date.now() - t0} ms, code load ${loadedAt - loadStart} ms); workspace trusted: ${vscode.workspace.isTrusted}`,
  );
  return { activationMs, daemon: d };
}

export async function deactivate(): Promise<void> {
  await daemon?.dispose();
  daemon = undefined;
}
