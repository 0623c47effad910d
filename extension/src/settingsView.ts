/** Reads the `dynamoLens` section as plain values (keys without the prefix). */

import * as vscode from 'vscode';

export function readRawSettings(scope?: vscode.Uri): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration('dynamoLens', scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(cfg)) {
    const v: unknown = cfg.get(key);
    if (typeof v !== 'function') raw[key] = v;
  }
  return raw;
}
