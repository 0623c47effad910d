/**
 * Types for the messages that go beyond standard LSP (docs/lsp-contract.md), as rust-analyzer's
 * lsp_ext.ts does: each server command with its arguments and result, and the status
 * notification. Pure: no `vscode`. tests/unit/test_contract.py keeps the command ids, the status
 * name and the doc in step with the daemon.
 */

export const SERVER_COMMANDS = {
  checkFile: 'dynamoLens.server.checkFile',
  checkWorkspace: 'dynamoLens.server.checkWorkspace',
  listTargets: 'dynamoLens.server.listTargets',
  benchmark: 'dynamoLens.server.benchmark',
  clearCache: 'dynamoLens.server.clearCache',
  loadTrace: 'dynamoLens.server.loadTrace',
  runFile: 'dynamoLens.server.runFile',
  runSummary: 'dynamoLens.server.runSummary',
  clearRun: 'dynamoLens.server.clearRun',
  environment: 'dynamoLens.server.environment',
  openDocs: 'dynamoLens.server.openDocs',
  verifyFix: 'dynamoLens.server.verifyFix',
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
  trusted?: boolean;
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

export interface LoadTraceResult {
  files: number;
  findings: number;
  records: number;
  skipped: number;
}

/** Sent by the "Verify, then apply" code action of a graph break (the daemon builds it). */
export interface VerifyFixRequest {
  uri: string;
  line: number;
  target: string;
  gbType: string;
  rule: string;
}

export interface VerifyFixCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface VerifyFixResult {
  verified: boolean;
  checks: VerifyFixCheck[];
  rule: string;
  applied: boolean;
  cancelled?: boolean;
}

export interface RunFileRequest {
  uri?: string;
  command?: string;
}

export interface RunFileResult extends LoadTraceResult {
  exitCode: number;
  cancelled: boolean;
}

/** One distinct break of the last run: file, line and graph-break id. */
export interface RunSummaryRow {
  uri: string;
  line: number;
  gbId: string | null;
  what: string;
  count: number;
  frames: number;
  ranks: string;
  compileSeconds: number;
}

/** A compiled function of a run (a library one at the user's line that called it). */
export interface RunFunctionRow {
  uri: string;
  line: number;
  name: string;
  library: string | null;
  seconds: number;
  dynamoSeconds: number;
  inductorSeconds: number;
  compiles: number;
  graphs: number;
  breaks: number;
  recompiles: number;
}

export interface RunSummary {
  provenance: string;
  loadedAt: number;
  exitCode: number | null;
  cancelled: boolean;
  torch: string | null;
  dynamoSeconds: number;
  inductorSeconds: number;
  framesCompiled: number;
  skipped: number;
  /** Distinct breaks beyond the rows sent (the costliest 500 are). */
  rowsNotShown?: number;
  rows: RunSummaryRow[];
  /** Compiled functions, the costliest to compile first (the first 500). */
  functions?: RunFunctionRow[];
  functionsNotShown?: number;
}

/** Each `dynamoLens.server.*` command's arguments and result (the contract's command table). */
export interface ServerCommands {
  checkFile: { args: [uri: string]; result: CheckFileResult };
  checkWorkspace: { args: []; result: CheckWorkspaceResult };
  listTargets: { args: [] | [uri: string]; result: TargetInfo[] };
  benchmark: { args: [BenchmarkRequest]; result: BenchmarkResult | { cancelled: true; target: string } };
  clearCache: { args: []; result: ClearCacheResult };
  loadTrace: { args: [path: string]; result: LoadTraceResult };
  runFile: { args: [RunFileRequest]; result: RunFileResult };
  runSummary: { args: []; result: RunSummary | null };
  clearRun: { args: []; result: { files: number } };
  environment: { args: []; result: EnvironmentInfo };
  openDocs: { args: [url: string]; result: null };
  verifyFix: { args: [VerifyFixRequest]; result: VerifyFixResult };
}

export type ServerCommand = keyof typeof SERVER_COMMANDS & keyof ServerCommands;
