/**
 * The language status item ("{}" next to the language mode when a Python file is active): torch
 * version, devices, idle or busy, Restricted Mode, and the last error, with a "Show logs" action.
 */

import * as vscode from 'vscode';
import type { DaemonStatus } from './protocol';
import { describeStatus, type StatusContext, type StatusView } from './status';

export class StatusController implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private status: DaemonStatus | undefined;
  private ctx: StatusContext;
  private view: StatusView | undefined;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem('dynamoLens.status', { language: 'python' });
    this.item.name = 'Dynamo Lens';
    this.item.command = { title: 'Show logs', command: 'dynamoLens.showLogs' };
    this.ctx = { trusted: vscode.workspace.isTrusted, phase: 'starting' };
    this.render();
  }

  /** A `dynamoLens/status` notification from the daemon. */
  update(status: DaemonStatus): void {
    this.status = status;
    this.render();
  }

  setContext(patch: Partial<StatusContext>): void {
    this.ctx = { ...this.ctx, ...patch };
    if (patch.phase === 'starting') this.status = undefined;
    this.render();
  }

  get current(): StatusView | undefined {
    return this.view;
  }

  get daemonStatus(): DaemonStatus | undefined {
    return this.status;
  }

  private render(): void {
    const view = describeStatus(this.status, this.ctx);
    this.view = view;
    this.item.text = view.text;
    this.item.detail = view.detail;
    this.item.busy = view.busy;
    this.item.severity =
      view.severity === 'error'
        ? vscode.LanguageStatusSeverity.Error
        : view.severity === 'warning'
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
  }

  dispose(): void {
    this.item.dispose();
  }
}
