/**
 * "Dynamo Lens: Benchmark target…": pick target, device(s), mode and dynamic; run the daemon's
 * benchmark with progress and cancel; show the result as a table and chart in a webview.
 */

import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { readRawSettings } from './settingsView';
import type { Daemon } from './daemon';
import { deviceChoices, dynamicChoices, modeChoices, targetChoices, type Choice } from './pick';
import {
  type BenchmarkCommandArgs,
  type BenchmarkRequest,
  type BenchmarkResult,
  type EnvironmentInfo,
  type TargetInfo,
} from './protocol';
import { parseBenchmarkResult, renderBenchmarkHtml, toMarkdown } from './render';
import { withServerProgress } from './serverProgress';
import { benchmarkDefaults } from './settings';

type Item<T> = vscode.QuickPickItem & { value: T };

function toItems<T>(choices: Choice<T>[]): Item<T>[] {
  return choices.map((c) => ({ label: c.label, description: c.description, detail: c.detail, picked: c.picked, value: c.value }));
}

export class BenchmarkPanel {
  private panel: vscode.WebviewPanel | undefined;
  private result: BenchmarkResult | undefined;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  show(result: BenchmarkResult): void {
    this.result = result;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        'dynamoLens.benchmark',
        `Benchmark: ${result.target}`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: true, localResourceRoots: [], enableFindWidget: true },
      );
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((m: { type?: string }) => {
        if (m?.type === 'copyMarkdown') void this.copyMarkdown();
      });
    }
    this.panel.title = `Benchmark: ${result.target}`;
    const nonce = randomBytes(16).toString('base64');
    this.panel.webview.html = renderBenchmarkHtml(result, { nonce, cspSource: this.panel.webview.cspSource });
    // Keep the focus in the editor: its language status item and the user's place stay put.
    this.panel.reveal(undefined, true);
  }

  async copyMarkdown(): Promise<void> {
    if (!this.result) return;
    await vscode.env.clipboard.writeText(toMarkdown(this.result));
    this.log.info(`Copied the benchmark of ${this.result.target} as Markdown`);
    void vscode.window.showInformationMessage('Dynamo Lens: benchmark table copied as Markdown.');
  }
}

async function pickTarget(daemon: Daemon, args: BenchmarkCommandArgs): Promise<TargetInfo | undefined> {
  const active = vscode.window.activeTextEditor?.document;
  const activeUri = active?.languageId === 'python' ? active.uri.toString() : undefined;
  if (args.target && args.uri) return { target: args.target, uri: args.uri, line: 0 };
  const targets = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Dynamo Lens: finding targets' },
    () => daemon.executeCommand('listTargets', args.uri ? [args.uri] : []),
  );
  if (!Array.isArray(targets) || targets.length === 0) {
    void vscode.window.showInformationMessage(
      'Dynamo Lens found no targets. Add a module-level compile_example() that returns (model, args), or name targets in [tool.dynamo-lens] of pyproject.toml.',
    );
    return undefined;
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const items = toItems(targetChoices(targets, args.uri ?? activeUri, root));
  const chosen = await vscode.window.showQuickPick(items, {
    title: 'Dynamo Lens: Benchmark (1/4) target',
    placeHolder: 'Which target to benchmark?',
    matchOnDescription: true,
    ignoreFocusOut: true,
  });
  return chosen?.value;
}

async function pickDevices(daemon: Daemon, configured: string[]): Promise<string[] | undefined> {
  let env: EnvironmentInfo | undefined;
  try {
    env = await daemon.executeCommand('environment', []);
  } catch {
    env = undefined;
  }
  const choices = deviceChoices(env?.devices ?? [], configured);
  if (choices.length === 1) return [choices[0].value]; // nothing to choose
  const chosen = await vscode.window.showQuickPick(toItems(choices), {
    title: 'Dynamo Lens: Benchmark (2/4) devices',
    placeHolder: 'Devices to time on (the worker found these)',
    canPickMany: true,
    ignoreFocusOut: true,
  });
  if (!chosen || chosen.length === 0) return undefined;
  return chosen.map((c) => c.value);
}

async function pickOne<T>(choices: Choice<T>[], title: string, placeHolder: string): Promise<{ value: T } | undefined> {
  const chosen = await vscode.window.showQuickPick(toItems(choices), { title, placeHolder, ignoreFocusOut: true });
  return chosen ? { value: chosen.value } : undefined;
}

/** Command arguments: `({uri, target, ...})`, `(uri, target)` (a code lens), `(Uri)` (a menu) or none. */
export function benchmarkArgs(first?: unknown, second?: unknown): BenchmarkCommandArgs {
  if (first instanceof vscode.Uri) return { uri: first.toString() };
  if (typeof first === 'string') return typeof second === 'string' ? { uri: first, target: second } : { uri: first };
  if (first && typeof first === 'object') return { ...(first as BenchmarkCommandArgs) };
  return {};
}

export async function benchmarkTarget(
  daemon: Daemon,
  panel: BenchmarkPanel,
  log: vscode.LogOutputChannel,
  args: BenchmarkCommandArgs = {},
): Promise<void> {
  const settings = benchmarkDefaults(readRawSettings());
  const target = await pickTarget(daemon, args);
  if (!target) return;
  const devices = args.devices ?? (await pickDevices(daemon, settings.devices));
  if (!devices) return;
  const mode = args.mode ?? (await pickOne(modeChoices(settings.mode), 'Dynamo Lens: Benchmark (3/4) mode', 'torch.compile mode'))?.value;
  if (!mode) return;
  const dynamic =
    args.dynamic !== undefined
      ? { value: args.dynamic }
      : await pickOne(dynamicChoices(settings.dynamic), 'Dynamo Lens: Benchmark (4/4) dynamic shapes', 'torch.compile dynamic=');
  if (!dynamic) return;

  const request: BenchmarkRequest = { uri: target.uri, target: target.target, devices, mode, dynamic: dynamic.value };
  log.info(`Benchmark: ${JSON.stringify(request)}`);
  const started = Date.now();
  const result = await withServerProgress(daemon, log, 'Benchmark', `Dynamo Lens: benchmarking ${target.target.split('::').pop()}`, (workDoneToken) =>
    daemon.executeCommand('benchmark', [request], undefined, workDoneToken),
  );
  if (result === 'cancelled') {
    void vscode.window.showInformationMessage('Dynamo Lens: benchmark cancelled.');
    return;
  }
  const parsed = parseBenchmarkResult(result);
  if (!parsed) {
    log.error(`Benchmark returned an unexpected result: ${JSON.stringify(result)}`);
    void vscode.window.showErrorMessage('Dynamo Lens: the benchmark returned no result; see the log.', 'Show logs').then((c) => {
      if (c) log.show();
    });
    return;
  }
  log.info(`Benchmark of ${parsed.target} finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  panel.show(parsed);
}
