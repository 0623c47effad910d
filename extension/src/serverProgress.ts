/**
 * A long daemon command (benchmark, run with analysis) under a cancellable notification: the
 * daemon's work-done progress on a token of ours shows in it, and Cancel sends the contract's
 * `window/workDoneProgress/cancel` for that token (the daemon stops the work and answers).
 */

import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { WorkDoneProgress, WorkDoneProgressCancelNotification } from 'vscode-languageclient/node';
import type { Daemon } from './daemon';

export async function withServerProgress<R>(
  daemon: Daemon,
  log: vscode.LogOutputChannel,
  what: string,
  title: string,
  send: (workDoneToken: string) => Promise<R>,
): Promise<R | 'cancelled'> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
    async (progress, token) => {
      const client = daemon.languageClient;
      const workDoneToken = `dynamoLens.${what}.${randomBytes(8).toString('hex')}`;
      let last = 0;
      const sub = client?.onProgress(WorkDoneProgress.type, workDoneToken, (p) => {
        if (p.kind === 'end') {
          log.info(`${what} progress ended${p.message ? `: ${p.message}` : ''}`);
          return;
        }
        const increment = typeof p.percentage === 'number' ? Math.max(0, p.percentage - last) : undefined;
        if (typeof p.percentage === 'number') last = p.percentage;
        progress.report({ message: p.message, increment });
      });
      const cancelled = new Promise<'cancelled'>((resolve) => {
        token.onCancellationRequested(() => {
          log.info(`${what} cancelled by the user`);
          void client?.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken }).catch(() => undefined);
          resolve('cancelled');
        });
      });
      const run = send(workDoneToken);
      // Keep listening until the daemon answers, so the log says how the cancel ended there.
      void run
        .then(
          (r) => {
            if (token.isCancellationRequested) {
              const acknowledged = !!r && typeof r === 'object' && (r as { cancelled?: unknown }).cancelled === true;
              log.info(`${what} request ended after the cancel: ${acknowledged ? 'cancelled by the daemon' : 'it had already finished'}`);
            }
          },
          (e: unknown) => {
            if (token.isCancellationRequested) log.info(`${what} request ended after the cancel: ${String(e)}`);
          },
        )
        .finally(() => {
          sub?.dispose();
        });
      return await Promise.race([run, cancelled]);
    },
  );
}
