/**
 * The "Graph Breaks of the Last Run" view: one row per distinct break (file, line, id), the
 * costliest first; a click opens the line.
 */

import * as vscode from 'vscode';
import type { Daemon } from './daemon';
import type { RunSummary } from './protocol';
import { summaryItem, summaryMessage, type SummaryItem } from './runSummary';

export const RUN_SUMMARY_VIEW = 'dynamoLens.runSummary';

export class RunSummaryView implements vscode.TreeDataProvider<SummaryItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<SummaryItem>;
  private summary: RunSummary | null = null;

  constructor(
    private readonly daemon: Daemon,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.view = vscode.window.createTreeView(RUN_SUMMARY_VIEW, { treeDataProvider: this, showCollapseAll: false });
    this.view.message = summaryMessage(null);
  }

  /** Asks the daemon for the last run's summary (it keeps runs across restarts). */
  async refresh(): Promise<void> {
    try {
      this.summary = await this.daemon.executeCommand('runSummary', []);
    } catch (e) {
      this.log.warn(`Reading the run summary: ${String(e)}`);
      return;
    }
    this.view.message = summaryMessage(this.summary);
    this.changed.fire();
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${RUN_SUMMARY_VIEW}.focus`);
  }

  getTreeItem(item: SummaryItem): vscode.TreeItem {
    const t = new vscode.TreeItem(item.label, vscode.TreeItemCollapsibleState.None);
    t.description = item.description;
    t.tooltip = item.tooltip;
    t.iconPath = new vscode.ThemeIcon('debug-breakpoint-unsupported');
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
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    return this.summary.rows.map((r) => summaryItem(r, root));
  }

  dispose(): void {
    this.view.dispose();
    this.changed.dispose();
  }
}
