/**
 * The `dynamoLens.*` settings: which keys the daemon receives. Pure: no `vscode`. The client
 * passes values through unchanged: the daemon (daemon/dynamo_lens/config.py) validates them and
 * warns about bad ones, and package.json holds the defaults and the schema.
 */

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
  'libraryFindings',
  'keepDiagnosticsOnClose',
  'knownFindings',
] as const;

/** Keys only the client reads; never sent to the daemon. */
export const CLIENT_ONLY_KEYS = ['interpreter', 'runCommand', 'trace'] as const;

/** Settings whose change needs a new daemon process (the rest the daemon re-reads live). */
export const RESTART_KEYS = ['interpreter'] as const;

/** What the benchmark's quick picks preselect: the configured values where they have the right
 * shape, else nothing (the pick then starts at its first choice). A hint, not validation. */
export interface BenchmarkDefaults {
  devices: string[];
  mode: string;
  dynamic: boolean | null;
}

export function benchmarkDefaults(raw: Record<string, unknown>): BenchmarkDefaults {
  const devices = typeof raw.devices === 'string' ? [raw.devices] : raw.devices;
  return {
    devices: Array.isArray(devices) && devices.every((d) => typeof d === 'string') ? devices : ['auto'],
    mode: typeof raw.mode === 'string' && raw.mode ? raw.mode : 'default',
    dynamic: typeof raw.dynamic === 'boolean' ? raw.dynamic : null,
  };
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
