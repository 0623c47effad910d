/**
 * The last run's distinct-break summary as rows for the tree view: no vscode here, so the
 * wording is unit-tested under node.
 */

import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunFunctionRow, RunSummary, RunSummaryRow } from './protocol';

export interface SummaryItem {
  label: string;
  description: string;
  tooltip: string;
  uri: string;
  line: number;
}

/** `models/gpt.py` for a file under the workspace root, else the file's name. */
export function relativePath(uri: string, root: string | undefined): string {
  let file: string;
  try {
    file = fileURLToPath(uri);
  } catch {
    return uri; // not a file URI: shown as it is
  }
  const rel = root ? path.relative(root, file) : '';
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : path.basename(file);
}

function seconds(s: number): string {
  return s >= 10 ? `${s.toFixed(0)} s` : s >= 0.1 ? `${s.toFixed(2)} s` : `${(s * 1000).toFixed(0)} ms`;
}

export function summaryItem(row: RunSummaryRow, root: string | undefined): SummaryItem {
  const where = `${relativePath(row.uri, root)}:${row.line}`;
  const parts = [`${row.count}×`, `${row.frames} frame${row.frames === 1 ? '' : 's'}`, `${seconds(row.compileSeconds)} compile`];
  if (row.ranks) parts.push(row.ranks);
  return {
    label: `${where} ${row.gbId ?? ''}`.trim(),
    description: `${row.what} · ${parts.join(' · ')}`,
    tooltip: `${row.what} (${row.gbId ?? 'no id'}) at ${where}: seen ${row.count} time(s) in ${row.frames} compiled frame(s)${row.ranks ? `, ${row.ranks}` : ''}; those frames took ${seconds(row.compileSeconds)} to compile`,
    uri: row.uri,
    line: row.line,
  };
}

/** The view's header line: which run, how it ended, and what compiling cost. */
export function summaryMessage(summary: RunSummary | null | undefined): string {
  if (!summary) return 'No run yet: run "Dynamo Lens: Run File with Analysis" or "Load Torch Trace…".';
  const ended = summary.cancelled ? ' (cancelled)' : summary.exitCode ? ` (exit code ${summary.exitCode})` : '';
  const n = summary.rows.length + (summary.rowsNotShown ?? 0);
  const breaks = n === 0 ? 'no graph breaks' : `${n} distinct graph break${n === 1 ? '' : 's'}`;
  const listed = summary.rowsNotShown ? ` (the costliest ${summary.rows.length} listed)` : '';
  const skipped = summary.skipped ? `; ${summary.skipped} unreadable trace line(s) skipped` : '';
  return `${summary.provenance}${ended}: ${breaks}${listed}; compile time Dynamo ${seconds(summary.dynamoSeconds)}, Inductor ${seconds(summary.inductorSeconds)}${skipped}`;
}

/** A compiled function: what compiling it cost (Dynamo, Inductor) and what it produced. */
export function functionItem(f: RunFunctionRow, root: string | undefined): SummaryItem {
  const where = `${relativePath(f.uri, root)}:${f.line}`;
  const parts = [`Dynamo ${seconds(f.dynamoSeconds)}`, `Inductor ${seconds(f.inductorSeconds)}`];
  parts.push(`${f.graphs} graph${f.graphs === 1 ? '' : 's'}`);
  if (f.breaks) parts.push(`${f.breaks} break${f.breaks === 1 ? '' : 's'}`);
  if (f.recompiles) parts.push(`${f.recompiles} recompile${f.recompiles === 1 ? '' : 's'}`);
  const library = f.library ? ` (${f.library}, called here)` : '';
  return {
    label: `${seconds(f.seconds)} ${f.name}${library}`,
    description: `${where} · ${parts.join(' · ')}`,
    tooltip: `${f.name}${library} at ${where}: compiling it took ${seconds(f.seconds)} (Dynamo ${seconds(f.dynamoSeconds)}, Inductor ${seconds(f.inductorSeconds)}) over ${f.compiles} compilation(s)`,
    uri: f.uri,
    line: f.line,
  };
}

/** The compile-time view's header line. */
export function functionsMessage(summary: RunSummary | null | undefined): string {
  if (!summary) return 'No run yet.';
  const fns = summary.functions ?? [];
  const n = fns.length + (summary.functionsNotShown ?? 0);
  if (n === 0) return `${summary.provenance}: no compiled function of this workspace`;
  const listed = summary.functionsNotShown ? ` (the costliest ${fns.length} listed)` : '';
  return `${summary.provenance}: ${n} compiled function${n === 1 ? '' : 's'}${listed}, the costliest to compile first`;
}
