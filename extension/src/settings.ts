/**
 * The `dynamoLens.*` settings: which keys the daemon receives and how the client validates the ones
 * it uses itself. Pure: no `vscode`. Keys and value rules follow docs/lsp-contract.md and
 * daemon/dynamo_lens/config.py; the daemon is the authority that warns about bad values.
 */

export const ALL_CHECKS = ['breaks', 'recompiles', 'equivalence', 'timings'] as const;
export const MODES = ['default', 'reduce-overhead', 'max-autotune', 'max-autotune-no-cudagraphs'] as const;

/** Keys sent to the daemon (initializationOptions.settings, workspace/configuration). */
export const SERVER_SETTING_KEYS = [
  'devices',
  'checks',
  'checksOnSave',
  'backend',
  'mode',
  'dynamic',
  'rtol',
  'atol',
  'timeout',
  'workerCount',
  'memoryLimitMb',
  'timingThreads',
  'excludes',
  'guessTargets',
  'keepDiagnosticsOnClose',
] as const;

/** Keys only the client reads; never sent to the daemon. */
export const CLIENT_ONLY_KEYS = ['interpreter', 'trace'] as const;

/** Settings whose change needs a new daemon process (the rest the daemon re-reads live). */
export const RESTART_KEYS = ['interpreter'] as const;

export type Check = (typeof ALL_CHECKS)[number];
export type Mode = (typeof MODES)[number];

export interface Settings {
  interpreter: string;
  devices: string[];
  checks: Check[];
  checksOnSave: Check[];
  backend: string;
  mode: Mode;
  dynamic: boolean | null;
  rtol: number | null;
  atol: number | null;
  timeout: number;
  workerCount: number;
  memoryLimitMb: number;
  timingThreads: number;
  excludes: string[];
  guessTargets: boolean;
  keepDiagnosticsOnClose: boolean;
}

export const DEFAULT_EXCLUDES = [
  '.git',
  '.hg',
  '.venv',
  'venv',
  '.tox',
  '.nox',
  'node_modules',
  '__pycache__',
  'build',
  'dist',
  '.mypy_cache',
  '.ruff_cache',
  '.pytest_cache',
  '.dynamo-lens',
  'site-packages',
];

export function defaultSettings(): Settings {
  return {
    interpreter: '',
    devices: ['auto'],
    checks: [...ALL_CHECKS],
    checksOnSave: ['breaks', 'recompiles'],
    backend: 'inductor',
    mode: 'default',
    dynamic: null,
    rtol: null,
    atol: null,
    timeout: 120,
    workerCount: 1,
    memoryLimitMb: 8192,
    timingThreads: 1,
    excludes: [...DEFAULT_EXCLUDES],
    guessTargets: true,
    keepDiagnosticsOnClose: true,
  };
}

const DEVICE_RE = /^(auto|cpu|cuda|cuda:\d+)$/;

function isStringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

type Validator = (v: unknown) => { ok: true; value: unknown } | { ok: false };

const ok = (value: unknown) => ({ ok: true as const, value });
const bad = { ok: false as const };

function checkList(v: unknown) {
  const items = typeof v === 'string' ? [v] : v;
  if (!isStringList(items)) return bad;
  if (items.length === 1 && items[0] === 'all') return ok([...ALL_CHECKS]);
  return items.every((i) => (ALL_CHECKS as readonly string[]).includes(i)) ? ok(items) : bad;
}

const VALIDATORS: Record<keyof Settings, Validator> = {
  interpreter: (v) => (typeof v === 'string' ? ok(v.trim()) : bad),
  devices: (v) => {
    const items = typeof v === 'string' ? [v] : v;
    return isStringList(items) && items.length > 0 && items.every((d) => DEVICE_RE.test(d)) ? ok(items) : bad;
  },
  checks: checkList,
  checksOnSave: checkList,
  backend: (v) => (typeof v === 'string' && v.length > 0 ? ok(v) : bad),
  mode: (v) => (typeof v === 'string' && (MODES as readonly string[]).includes(v) ? ok(v) : bad),
  dynamic: (v) => (v === null || v === undefined || v === 'auto' ? ok(null) : typeof v === 'boolean' ? ok(v) : bad),
  rtol: (v) => (v === null || v === undefined ? ok(null) : isNumber(v) && v >= 0 ? ok(v) : bad),
  atol: (v) => (v === null || v === undefined ? ok(null) : isNumber(v) && v >= 0 ? ok(v) : bad),
  timeout: (v) => (isNumber(v) && v > 0 ? ok(v) : bad),
  workerCount: (v) => (Number.isInteger(v) && (v as number) > 0 ? ok(v) : bad),
  memoryLimitMb: (v) => (Number.isInteger(v) && (v as number) > 0 ? ok(v) : bad),
  timingThreads: (v) => (Number.isInteger(v) && (v as number) > 0 ? ok(v) : bad),
  excludes: (v) => (isStringList(v) ? ok(v) : typeof v === 'string' ? ok([v]) : bad),
  guessTargets: (v) => (typeof v === 'boolean' ? ok(v) : bad),
  keepDiagnosticsOnClose: (v) => (typeof v === 'boolean' ? ok(v) : bad),
};

export interface ValidationResult {
  settings: Settings;
  /** One human-readable line per bad value, naming the setting. */
  problems: string[];
}

/**
 * Normalises raw `dynamoLens` configuration values (keys without the prefix). A bad value is
 * replaced by its default and reported; unknown keys are ignored (they may belong to `trace`).
 */
export function validateSettings(raw: Record<string, unknown>): ValidationResult {
  const settings = defaultSettings();
  const problems: string[] = [];
  for (const key of Object.keys(VALIDATORS) as (keyof Settings)[]) {
    if (!(key in raw) || raw[key] === undefined) continue;
    const result = VALIDATORS[key](raw[key]);
    if (result.ok) {
      (settings as unknown as Record<string, unknown>)[key] = result.value;
    } else {
      problems.push(
        `dynamoLens.${key} has a bad value ${JSON.stringify(raw[key])}; using the default ${JSON.stringify(
          (defaultSettings() as unknown as Record<string, unknown>)[key],
        )}`,
      );
    }
  }
  return { settings, problems };
}

/**
 * The part of the raw configuration the daemon receives: contract keys only, values passed through
 * unchanged (the daemon validates them and warns with `window/showMessage`).
 */
export function serverSettings(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    if (key in raw && raw[key] !== undefined) out[key] = toPlain(raw[key]);
  }
  return out;
}

/** Did any setting that needs a daemon restart change? `affects` is ConfigurationChangeEvent-like. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((k) => affects(`dynamoLens.${k}`));
}

/** Deep-copies a configuration value into plain JSON (WorkspaceConfiguration proxies are not). */
export function toPlain(value: unknown): unknown {
  if (value === undefined) return undefined;
  return JSON.parse(JSON.stringify(value)) as unknown;
}
