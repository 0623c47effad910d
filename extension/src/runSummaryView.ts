/**
 * The last run's two views: "Graph Breaks of the Last Run" (one row per distinct break: file,
 * line, id) and "Compile Time of the Last Run" (one row per compiled function), each the
 * costliest first; a click opens the line. Both show the one summary the daemon sends.
 */

import * as vscode from 'vscode';
import type { Daemon } from './daemon';
import type { RunSummary } from './protocol';
import { functionItem, functionsMessage, summaryItem, summaryMessage, type SummaryItem } from './runSummary';

export const RUN_SUMMARY_VIEW = 'dynamoLens.runSummary';
export const RUN_FUNCTIONS_VIEW = 'dynamoLens.runFunctions';

type Rows = (summary: RunSummary, root: string | undefined) => SummaryItem[];

/** One tree of rows from the summary. */
class SummaryTree implements vscode.TreeDataProvider<SummaryItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<SummaryItem>;
  private summary: RunSummary | null = null;

  constructor(
    id: string,
    private readonly rows: Rows,
    private readonly message: (summary: RunSummary | null) => string,
    private readonly icon: string,
  ) {
    this.view = vscode.window.createTreeView(id, { treeDataProvider: this, showCollapseAll: false });
    this.view.message = message(null);
  }

  show(summary: RunSummary | null): void {
    this.summary = summary;
    this.view.message = this.message(summary);
    this.changed.fire();
  }

  getTreeItem(item: SummaryItem): vscode.TreeItem {
    const t = new vscode.TreeItem(item.label, vscode.TreeItemCollapsibleState.None);
    t.description = item.description;
    t.tooltip = item.tooltip;
    t.iconPath = new vscode.ThemeIcon(this.icon);
    const line = Math.max(item.line - 1, 0);
    t.command = {
      title: 'Open',
      command: 'vscode.open',
      arguments: [vscode.Uri.parse(item.uri), { selection: new vscode.Range(line, 0, line, 0) }],
    };
    return t;
  }

  getChildren(item?: SummaryItem): SummaryItem[] {
    if (item || !this.summary) return [];
    return this.rows(this.summary, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  }

  dispose(): void {
    this.view.dispose();
    this.changed.dispose();
  }
}

export class RunSummaryView implements vscode.Disposable {
  private readonly breaks = new SummaryTree(
    RUN_SUMMARY_VIEW,
    (s, root) => s.rows.map((r) => summaryItem(r, root)),
    summaryMessage,
    'debug-breakpoint-unsupported',
  );
  private readonly functions = new SummaryTree(
    RUN_FUNCTIONS_VIEW,
    (s, root) => (s.functions ?? []).map((f) => functionItem(f, root)),
    functionsMessage,
    'watch',
  );

  constructor(
    private readonly daemon: Daemon,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Asks the daemon for the last run's summary (it keeps runs across restarts). */
  async refresh(): Promise<void> {
    let summary: RunSummary | null;
    try {
      summary = await this.daemon.executeCommand('runSummary', []);
    } catch (e) {
      this.log.warn(`Reading the run summary: ${String(e)}`);
      return;
    }
    this.breaks.show(summary);
    this.functions.show(summary);
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${RUN_SUMMARY_VIEW}.focus`);
  }

  dispose(): void {
    this.breaks.dispose();
    this.functions.dispose();
  }
}
