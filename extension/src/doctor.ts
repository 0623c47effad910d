/**
 * `<interpreter> -m dynamo_lens doctor --json`: is the interpreter there, and does it have torch?
 * Pure: no `vscode`.
 */

import { spawn } from 'node:child_process';
import type { DoctorReport } from './protocol';
import type { ResolvedInterpreter } from './interpreter';

export interface DoctorOutcome {
  report?: DoctorReport;
  /** The interpreter could not be started at all (ENOENT, EACCES, ...). */
  spawnError?: string;
  /** It ran but gave no usable report (non-zero exit, no JSON, timeout). */
  failure?: string;
  stderr: string;
}

/** The last line of stdout that parses as a JSON object with a `missing` list (user site hooks may print). */
export function parseDoctor(stdout: string): DoctorReport | undefined {
  const lines = stdout.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  const candidates = [stdout.trim(), ...lines.reverse()];
  for (const text of candidates) {
    if (!text.startsWith('{')) continue;
    try {
      const obj = JSON.parse(text) as Record<string, unknown>;
      if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
        const missing = Array.isArray(obj.missing) ? obj.missing.filter((m): m is string => typeof m === 'string') : [];
        const torch = typeof obj.torch === 'string' ? obj.torch : null;
        return { ...obj, torch, missing };
      }
    } catch {
      // not this line
    }
  }
  return undefined;
}

export interface DoctorMessage {
  severity: 'error' | 'warning';
  message: string;
  /** torch is missing: the daemon still runs, for static analysis. */
  staticOnly: boolean;
}

/** The message for the user, or undefined when all is well. */
export function doctorMessage(
  interp: ResolvedInterpreter,
  outcome: DoctorOutcome,
  trusted: boolean,
): DoctorMessage | undefined {
  const who = `${interp.command} (${interp.reason})`;
  if (outcome.spawnError) {
    return {
      severity: 'error',
      staticOnly: false,
      message: `Dynamo Lens cannot start the Python interpreter ${who}: ${outcome.spawnError}. Set dynamoLens.interpreter to a Python that has torch.`,
    };
  }
  const report = outcome.report;
  if (!report) {
    // An older daemon without `doctor`, or a broken environment: say so in the log, try to start anyway.
    return undefined;
  }
  const missing = report.missing.filter((m) => m !== 'torch');
  if (missing.length > 0) {
    return {
      severity: 'error',
      staticOnly: false,
      message: `Dynamo Lens: the interpreter ${who} is missing ${missing.join(', ')}.`,
    };
  }
  if (report.torch === null || report.missing.includes('torch')) {
    if (!trusted) return undefined; // Restricted Mode runs no torch code anyway.
    return {
      severity: 'warning',
      staticOnly: true,
      message: `Dynamo Lens: torch is not installed in ${who}. Only static checks run; install torch there or set dynamoLens.interpreter to a Python that has it.`,
    };
  }
  return undefined;
}

export function runDoctor(
  command: string,
  opts: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs?: number },
): Promise<DoctorOutcome> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    const done = (o: DoctorOutcome) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(o);
      }
    };
    let child;
    try {
      child = spawn(command, ['-m', 'dynamo_lens', 'doctor', '--json'], {
        env: opts.env,
        cwd: opts.cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (e) {
      resolve({ spawnError: String(e), stderr: '' });
      return;
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done({ failure: `doctor timed out after ${opts.timeoutMs ?? 30000} ms`, stderr });
    }, opts.timeoutMs ?? 30000);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', (err: NodeJS.ErrnoException) => {
      done({ spawnError: err.code === 'ENOENT' ? 'not found' : err.message, stderr });
    });
    child.on('close', (code) => {
      const report = parseDoctor(stdout);
      if (report) done({ report, stderr });
      else done({ failure: `doctor exited with ${code} and no JSON report`, stderr });
    });
  });
}
