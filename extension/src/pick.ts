/**
 * Choices offered by "Benchmark target…". Pure: no `vscode` (benchmark.ts turns these into quick picks).
 */

import * as path from 'node:path';
import type { TargetInfo } from './protocol';

export interface Choice<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
  picked?: boolean;
}

function uriToPath(uri: string): string {
  try {
    const u = new URL(uri);
    return u.protocol === 'file:' ? decodeURIComponent(u.pathname) : uri;
  } catch {
    return uri;
  }
}

/** Targets, those of the active file first, each with its workspace-relative location. */
export function targetChoices(targets: TargetInfo[], activeUri?: string, workspaceRoot?: string): Choice<TargetInfo>[] {
  const sorted = [...targets].sort((a, b) => {
    const aa = a.uri === activeUri ? 0 : 1;
    const bb = b.uri === activeUri ? 0 : 1;
    return aa - bb || a.uri.localeCompare(b.uri) || a.line - b.line;
  });
  return sorted.map((t) => {
    const file = uriToPath(t.uri);
    const rel = workspaceRoot ? path.relative(workspaceRoot, file) : path.basename(file);
    const name = t.target.includes('::') ? t.target.split('::').slice(1).join('::') : t.target;
    return {
      label: name,
      description: `${rel}:${t.line}`,
      detail: [t.kind, t.uri === activeUri ? 'in the active file' : ''].filter(Boolean).join(' · ') || undefined,
      value: t,
    };
  });
}

/** Devices the worker found; those the settings select are pre-picked ("auto" picks all). */
export function deviceChoices(found: string[], configured: string[]): Choice<string>[] {
  const devices = found.length > 0 ? found : ['cpu'];
  const wantsAll = configured.includes('auto');
  const matches = (d: string) =>
    wantsAll || configured.includes(d) || (configured.includes('cuda') && d.startsWith('cuda'));
  const anyPicked = devices.some(matches);
  return devices.map((d) => ({ label: d, value: d, picked: anyPicked ? matches(d) : true }));
}

export const MODE_CHOICES: Choice<string>[] = [
  { label: 'default', value: 'default', description: 'balanced compile time and speed' },
  { label: 'reduce-overhead', value: 'reduce-overhead', description: 'CUDA graphs: less Python overhead per call' },
  { label: 'max-autotune', value: 'max-autotune', description: 'autotunes kernels: slow compile, fastest code' },
];

/** The configured mode first, so that Enter keeps the setting. */
export function modeChoices(configured: string): Choice<string>[] {
  const list = [...MODE_CHOICES];
  if (!list.some((c) => c.value === configured)) list.push({ label: configured, value: configured });
  const i = list.findIndex((c) => c.value === configured);
  const [cur] = list.splice(i, 1);
  return [{ ...cur, detail: 'the dynamoLens.mode setting' }, ...list];
}

export function dynamicChoices(configured: boolean | null): Choice<boolean | null>[] {
  const list: Choice<boolean | null>[] = [
    { label: 'dynamic off', value: false, description: 'dynamic=False: specialise on every shape' },
    { label: 'dynamic on', value: true, description: 'dynamic=True: symbolic shapes from the first call' },
    { label: 'automatic', value: null, description: "torch's default: dynamic after the first recompile" },
  ];
  const i = list.findIndex((c) => c.value === configured);
  const [cur] = list.splice(i < 0 ? 2 : i, 1);
  return [{ ...cur, detail: 'the dynamoLens.dynamic setting' }, ...list];
}
