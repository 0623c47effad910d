/**
 * The daemon's lifecycle: pick the interpreter, run `doctor`, start `<python> -m dynamo_lens serve`
 * over stdio with vscode-languageclient, restart it (queued: never two at once) when the
 * interpreter, the Python extension's environment or workspace trust changes.
 */

import { spawn } from 'node:child_process';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { readRawSettings } from './settingsView';
import { doctorMessage, runDoctor } from './doctor';
import { bundledDir, daemonCwd, daemonEnv, findExecutable, resolveInterpreter, type ResolvedInterpreter } from './interpreter';
import { SERVER_COMMANDS, STATUS_NOTIFICATION, type ServerCommand, type ServerCommands } from './protocol';
import { pythonExtensionInterpreter } from './pythonExtension';
import { RestartQueue } from './restartQueue';
import { serverSettings } from './settings';
import { parseStatus } from './status';
import type { StatusController } from './statusView';

/** The client, with its own start-failure popup muted: Daemon shows one that names the cause. */
class DaemonClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    const muted = /couldn't create connection to server|Server initialization failed/.test(message);
    super.error(message, data, muted ? false : showNotification);
  }
}

export class DaemonNotRunningError extends Error {
  constructor() {
    super('The Dynamo Lens daemon is not running.');
  }
}

export class Daemon implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly queue = new RestartQueue(() => this.restartNow());
  private disposed = false;
  private crashes: number[] = [];
  private stderrTail: string[] = [];
  /** The current client reached `initialized` at least once. */
  private initialized = false;
  private readonly warned = new Set<string>();
  interpreter: ResolvedInterpreter | undefined;
  /** Milliseconds from `restart()` to the client's `initialized` (the last start). */
  lastStartMs: number | undefined;
  private readonly started = new vscode.EventEmitter<void>();
  /** Fires each time a daemon is up (the first start and every restart). */
  readonly onDidStart = this.started.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly status: StatusController,
  ) {}

  /** Starts or restarts the daemon; concurrent calls collapse into one follow-up restart. */
  restart(reason: string): Promise<void> {
    this.log.info(`Daemon (re)start requested: ${reason}`);
    return this.queue.request().catch((e: unknown) => {
      this.log.error(`Daemon start failed: ${String(e)}`);
    });
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** `workspace/executeCommand` for a `dynamoLens.server.*` command, typed by protocol.ts. */
  async executeCommand<K extends ServerCommand>(
    name: K,
    args: ServerCommands[K]['args'],
    token?: vscode.CancellationToken,
    workDoneToken?: string,
  ): Promise<ServerCommands[K]['result']> {
    const client = this.client;
    if (!client || client.state !== State.Running) throw new DaemonNotRunningError();
    const params: { command: string; arguments: unknown[]; workDoneToken?: string } = {
      command: SERVER_COMMANDS[name],
      arguments: args,
    };
    if (workDoneToken) params.workDoneToken = workDoneToken;
    return (await client.sendRequest(ExecuteCommandRequest.type, params, token)) as ServerCommands[K]['result'];
  }

  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  /** Pushes changed settings (the daemon also re-pulls them with workspace/configuration). */
  async pushSettings(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== State.Running) return;
    const raw = this.rawSettings();
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { dynamoLens: serverSettings(raw) },
    });
  }

  private rawSettings(): Record<string, unknown> {
    return readRawSettings();
  }

  private async resolve(): Promise<ResolvedInterpreter> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const trusted = vscode.workspace.isTrusted;
    const setting = vscode.workspace.getConfiguration('dynamoLens', folder?.uri).get<string>('interpreter') ?? '';
    const fromPython = setting.trim() ? undefined : await pythonExtensionInterpreter(folder?.uri, this.log);
    return resolveInterpreter({
      setting,
      workspaceFolder: folder?.uri.fsPath,
      pythonExtension: fromPython,
      trusted,
    });
  }

  private async restartNow(): Promise<void> {
    const t0 = Date.now();
    await this.stopClient();
    if (this.disposed) return;
    this.crashes = [];
    this.initialized = false;
    const trusted = vscode.workspace.isTrusted;
    this.status.setContext({ phase: 'starting', trusted, clientError: undefined, staticOnly: undefined });

    const interp = await this.resolve();
    this.interpreter = interp;
    const root = this.context.extensionUri.fsPath;
    const bundled = bundledDir(root);
    const env = daemonEnv(bundled);
    const cwd = daemonCwd(bundled, root);
    const found = findExecutable(interp.command, env);
    this.log.info(`Interpreter: ${interp.command} (${interp.reason})${found && found !== interp.command ? ` → ${found}` : ''}`);
    this.log.info(`PYTHONPATH=${env.PYTHONPATH ?? ''}`);
    this.status.setContext({ interpreter: interp.command });

    const outcome = await runDoctor(interp.command, { env, cwd, timeoutMs: 60000 });
    if (outcome.report) this.log.info(`doctor: ${JSON.stringify(outcome.report)}`);
    if (outcome.failure) this.log.warn(`doctor: ${outcome.failure}${outcome.stderr ? `\n${outcome.stderr.trim()}` : ''}`);
    const problem = doctorMessage(interp, outcome, trusted);
    if (problem) {
      this.log[problem.severity === 'error' ? 'error' : 'warn'](problem.message);
      this.notify(problem.severity, problem.message, `${interp.command}:${problem.message}`);
      if (outcome.spawnError) {
        this.status.setContext({ phase: 'failed', clientError: problem.message });
        return; // nothing to start
      }
      if (problem.staticOnly) this.status.setContext({ staticOnly: problem.message });
    }
    if (this.disposed) return;

    const raw = this.rawSettings();
    // Spawned here (not by the client) to keep the daemon's last stderr lines for error messages;
    // the client still copies stderr to the log.
    this.stderrTail = [];
    const serverOptions: ServerOptions = () => {
      const child = spawn(interp.command, ['-m', 'dynamo_lens', 'serve'], { cwd, env, stdio: 'pipe', windowsHide: true });
      child.stderr.on('data', (d: Buffer) => {
        for (const line of d.toString('utf8').split(/\r?\n/)) {
          if (line.trim()) this.stderrTail.push(line.trim());
        }
        this.stderrTail = this.stderrTail.slice(-20);
      });
      return Promise.resolve(child);
    };
    const clientOptions: LanguageClientOptions = {
      // Python files, and the Python cells of notebooks (the daemon asks for notebook sync).
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { notebook: 'jupyter-notebook', language: 'python' },
      ],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: { trusted, settings: serverSettings(raw) },
      errorHandler: this.errorHandler(),
      initializationFailedHandler: () => false,
      middleware: {
        workspace: {
          // The daemon asks for section `dynamoLens`: give it the contract keys only.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return result.map((value: unknown, i) =>
              params.items[i]?.section === 'dynamoLens' && value && typeof value === 'object'
                ? serverSettings(value as Record<string, unknown>)
                : value,
            );
          },
        },
      },
    };
    const client = new DaemonClient('dynamoLens', 'Dynamo Lens', serverOptions, clientOptions);
    client.onNotification(STATUS_NOTIFICATION, (raw: unknown) => {
      const s = parseStatus(raw);
      if (s) this.status.update(s);
    });
    client.onDidChangeState((e) => {
      if (client !== this.client) return;
      if (e.newState === State.Running) {
        this.initialized = true;
        this.status.setContext({ phase: 'running' });
      }
    });
    this.client = client;
    try {
      await client.start();
      this.lastStartMs = Date.now() - t0;
      this.started.fire();
      this.log.info(`Daemon started in ${this.lastStartMs} ms (trusted: ${trusted})`);
      this.status.setContext({ phase: 'running' });
    } catch (e) {
      await new Promise((r) => setTimeout(r, 200)); // let the last stderr arrive
      const why = this.stderrTail.at(-1) ?? (e instanceof Error ? e.message : String(e));
      const msg = `The Dynamo Lens daemon (${interp.command} -m dynamo_lens serve) failed to start: ${why}`;
      this.log.error(msg);
      this.status.setContext({ phase: 'failed', clientError: msg });
      this.notify('error', msg, `start:${interp.command}`);
    }
  }

  private errorHandler(): ErrorHandler {
    return {
      error: (_error, _message, count) => ({
        action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
        handled: true,
      }),
      closed: () => {
        if (!this.initialized) {
          // It died during startup: restarting will not help; start() reports the failure.
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        this.crashes = this.crashes.filter((t) => now - t < 3 * 60_000);
        this.crashes.push(now);
        if (this.crashes.length <= 4) {
          this.log.warn(`The daemon exited unexpectedly; restarting (${this.crashes.length} in the last 3 minutes).`);
          this.status.setContext({ phase: 'starting' });
          return { action: CloseAction.Restart, handled: true };
        }
        const msg = 'The Dynamo Lens daemon crashed 5 times in 3 minutes and was not restarted.';
        this.log.error(msg);
        this.status.setContext({ phase: 'failed', clientError: msg });
        this.notify('error', msg, `crash:${now}`);
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  /** A message with "Show logs" (and "Open settings" for interpreter problems), once per key. */
  private notify(severity: 'error' | 'warning', message: string, key: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    const show = severity === 'error' ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    void show(message, 'Show logs', 'Open settings').then((choice) => {
      if (choice === 'Show logs') this.log.show();
      if (choice === 'Open settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'dynamoLens.interpreter');
    });
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.state === State.Running || client.state === State.Starting) await client.stop(5000);
    } catch (e) {
      this.log.warn(`Stopping the daemon: ${String(e)}`);
    }
    try {
      await client.dispose(2000);
    } catch {
      // already stopped
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.queue.dispose();
    await this.stopClient();
    this.started.dispose();
  }
}
