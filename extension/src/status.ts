/**
 * What the language status item says. Pure: no `vscode`.
 */

import type { DaemonStatus } from './protocol';

export type ClientPhase = 'starting' | 'running' | 'stopped' | 'failed';

export interface StatusContext {
  trusted: boolean;
  phase: ClientPhase;
  /** The last client-side error (daemon crashed, interpreter missing, ...). */
  clientError?: string;
  /** Set when `doctor` found no torch (static analysis only). */
  staticOnly?: string;
  interpreter?: string;
}

export interface StatusView {
  text: string;
  detail: string;
  severity: 'information' | 'warning' | 'error';
  busy: boolean;
}

function describeTorchAndDevices(s: DaemonStatus | undefined): string {
  const parts: string[] = [];
  if (s?.torch) parts.push(`torch ${s.torch}`);
  if (s?.devices && s.devices.length > 0) parts.push(s.devices.join(', '));
  return parts.join(' · ');
}

export function describeStatus(s: DaemonStatus | undefined, ctx: StatusContext): StatusView {
  const env = describeTorchAndDevices(s);
  const withEnv = (head: string) => (env ? `${head} · ${env}` : head);
  const interp = ctx.interpreter ? `Interpreter: ${ctx.interpreter}` : '';
  const join = (...xs: (string | undefined)[]) => xs.filter(Boolean).join(' — ');

  if (ctx.phase === 'failed') {
    return {
      text: 'Dynamo Lens: error',
      detail: join(ctx.clientError ?? 'the daemon is not running', interp),
      severity: 'error',
      busy: false,
    };
  }
  if (ctx.phase === 'stopped') {
    return { text: 'Dynamo Lens: stopped', detail: join(ctx.clientError, interp), severity: 'warning', busy: false };
  }
  if (!ctx.trusted || s?.state === 'restricted') {
    return {
      text: 'Dynamo Lens: Restricted Mode',
      detail:
        s?.message ||
        'The workspace is not trusted, so none of its code runs: only static hints are shown. Trust the workspace for full analysis.',
      severity: 'warning',
      busy: false,
    };
  }
  if (ctx.phase === 'starting' || !s || s.state === 'starting') {
    return { text: 'Dynamo Lens: starting', detail: interp, severity: 'information', busy: true };
  }
  if (ctx.staticOnly && s.state !== 'busy' && s.state !== 'warming') {
    // torch is missing: a worker that cannot start is expected, not an error of its own.
    return {
      text: 'Dynamo Lens: static only (no torch)',
      detail: join(ctx.staticOnly, s.state === 'error' ? s.message : undefined),
      severity: 'warning',
      busy: false,
    };
  }
  switch (s.state) {
    case 'warming':
      return { text: withEnv('Dynamo Lens: warming up'), detail: join(s.message, interp), severity: 'information', busy: true };
    case 'busy': {
      const jobs = s.jobs ?? 0;
      const head = jobs > 0 ? `Dynamo Lens: busy (${jobs} job${jobs === 1 ? '' : 's'})` : 'Dynamo Lens: busy';
      return { text: withEnv(head), detail: join(s.message, interp), severity: 'information', busy: true };
    }
    case 'error':
      return { text: withEnv('Dynamo Lens: error'), detail: join(s.message || 'see the log', interp), severity: 'error', busy: false };
    case 'ready':
    default:
      return { text: withEnv('Dynamo Lens: idle'), detail: join(s.message, interp), severity: 'information', busy: false };
  }
}

/** Accepts a `dynamoLens/status` payload defensively (the daemon is another process). */
export function parseStatus(raw: unknown): DaemonStatus | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const states = ['starting', 'warming', 'ready', 'busy', 'error', 'restricted'];
  if (typeof o.state !== 'string' || !states.includes(o.state)) return undefined;
  return {
    state: o.state as DaemonStatus['state'],
    torch: typeof o.torch === 'string' ? o.torch : null,
    devices: Array.isArray(o.devices) ? o.devices.filter((d): d is string => typeof d === 'string') : [],
    jobs: typeof o.jobs === 'number' ? o.jobs : 0,
    message: typeof o.message === 'string' ? o.message : '',
  };
}
