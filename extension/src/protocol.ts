/**
 * Types for the messages that go beyond standard LSP (docs/lsp-contract.md). Pure: no `vscode`.
 */

export const SERVER_COMMANDS = {
  checkFile: 'dynamoLens.server.checkFile',
  checkWorkspace: 'dynamoLens.server.checkWorkspace',
  listTargets: 'dynamoLens.server.listTargets',
  benchmark: 'dynamoLens.server.benchmark',
  clearCache: 'dynamoLens.server.clearCache',
  environment: 'dynamoLens.server.environment',
} as const;

export const STATUS_NOTIFICATION = 'dynamoLens/status';

export type DaemonState = 'starting' | 'warming' | 'ready' | 'busy' | 'error' | 'restricted';

export interface DaemonStatus {
  state: DaemonState;
  torch?: string | null;
  devices?: string[];
  jobs?: number;
  message?: string;
}

export interface TargetInfo {
  target: string;
  uri: string;
  line: number;
  kind?: string;
}

export interface EnvironmentInfo {
  torch?: string | null;
  devices?: string[];
  python?: string;
  backend?: string;
}

export interface CheckFileResult {
  uri: string;
  targets: number;
  findings: number;
}

export interface CheckWorkspaceResult {
  files: number;
  findings: number;
}

export interface ClearCacheResult {
  removed: number;
}

export interface BenchmarkRequest {
  uri: string;
  target: string;
  devices: string[];
  mode: string;
  dynamic: boolean | null;
}

export interface BenchmarkRow {
  device: string;
  mode?: string;
  dynamic?: boolean | null;
  eager_median_ms?: number | null;
  eager_iqr_ms?: number | null;
  compiled_median_ms?: number | null;
  compiled_iqr_ms?: number | null;
  speedup?: number | null;
  cold_compile_s?: number | null;
  break_even_calls?: number | null;
  repeats?: number | null;
  error?: string | null;
}

export interface BenchmarkResult {
  target: string;
  uri?: string;
  environment?: {
    torch?: string | null;
    python?: string;
    backend?: string;
    mode?: string;
    dynamic?: boolean | null;
    [key: string]: unknown;
  };
  input_shapes?: string[];
  small_inputs?: boolean;
  rows: BenchmarkRow[];
  markdown?: string;
  measured_at?: string;
}

export interface DoctorReport {
  python?: string;
  executable?: string;
  torch: string | null;
  missing: string[];
  [key: string]: unknown;
}

/** Client arguments accepted by the `dynamoLens.benchmarkTarget` command (e.g. from a code lens). */
export interface BenchmarkCommandArgs {
  uri?: string;
  target?: string;
  devices?: string[];
  mode?: string;
  dynamic?: boolean | null;
}
