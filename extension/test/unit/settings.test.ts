import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  CLIENT_ONLY_KEYS,
  SERVER_SETTING_KEYS,
  defaultSettings,
  needsRestart,
  serverSettings,
  validateSettings,
} from '../../src/settings';

const ROOT = path.resolve(__dirname, '..', '..');

interface PropertySchema {
  default?: unknown;
  enum?: unknown[];
  items?: { enum?: unknown[] };
  scope?: string;
  markdownDescription?: string;
  description?: string;
}

function manifestProperties(): Record<string, PropertySchema> {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, PropertySchema> } };
  };
  return pkg.contributes.configuration.properties;
}

describe('validateSettings', () => {
  it('accepts the defaults unchanged', () => {
    const { settings, problems } = validateSettings(defaultSettings() as unknown as Record<string, unknown>);
    assert.deepEqual(problems, []);
    assert.deepEqual(settings, defaultSettings());
  });

  it('replaces each bad value with its default and names the setting', () => {
    const { settings, problems } = validateSettings({
      devices: ['gpu'],
      mode: 'fast',
      timeout: -1,
      workerCount: 1.5,
      rtol: 'tight',
      checks: ['breaks', 'speed'],
      dynamic: 'yes',
    });
    assert.deepEqual(settings.devices, ['auto']);
    assert.equal(settings.mode, 'default');
    assert.equal(settings.timeout, 120);
    assert.equal(settings.workerCount, 1);
    assert.equal(settings.rtol, null);
    assert.deepEqual(settings.checks, ['breaks', 'recompiles', 'equivalence', 'timings']);
    assert.equal(settings.dynamic, null);
    assert.equal(problems.length, 7);
    for (const key of ['devices', 'mode', 'timeout', 'workerCount', 'rtol', 'checks', 'dynamic']) {
      assert.ok(problems.some((p) => p.startsWith(`dynamoLens.${key} `)), `a problem names ${key}`);
    }
  });

  it('accepts good non-default values', () => {
    const { settings, problems } = validateSettings({
      devices: ['cpu', 'cuda:1'],
      checks: 'all',
      checksOnSave: ['breaks'],
      mode: 'max-autotune',
      dynamic: false,
      rtol: 0,
      atol: 1e-5,
      timeout: 30.5,
      memoryLimitMb: 4096,
      excludes: ['data'],
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(settings.devices, ['cpu', 'cuda:1']);
    assert.equal(settings.checks.length, 4);
    assert.equal(settings.dynamic, false);
    assert.equal(settings.rtol, 0);
  });
});

describe('serverSettings', () => {
  it('passes contract keys through and drops client-only keys', () => {
    const out = serverSettings({ interpreter: '/py', trace: { server: 'verbose' }, mode: 'bogus', devices: ['cpu'], other: 1 });
    assert.deepEqual(out, { mode: 'bogus', devices: ['cpu'] });
  });

  it('restarts only for the interpreter', () => {
    assert.equal(needsRestart((s) => s === 'dynamoLens.interpreter'), true);
    assert.equal(needsRestart((s) => s === 'dynamoLens.mode'), false);
  });
});

describe('package.json settings', () => {
  const props = manifestProperties();

  it('declares every contract key and client key, each with a description and a scope', () => {
    const expected = [...SERVER_SETTING_KEYS, 'interpreter', 'trace.server'].map((k) => `dynamoLens.${k}`);
    assert.deepEqual(Object.keys(props).sort(), expected.sort());
    for (const [key, p] of Object.entries(props)) {
      assert.ok(p.markdownDescription || p.description, `${key} has a description`);
      assert.ok(p.scope, `${key} has a scope`);
    }
    assert.deepEqual([...CLIENT_ONLY_KEYS].sort(), ['interpreter', 'trace']);
  });

  it('has the same defaults as the client', () => {
    const defaults = defaultSettings() as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(defaults)) {
      assert.deepEqual(props[`dynamoLens.${key}`].default, value, `default of dynamoLens.${key}`);
    }
  });

  it('has the same defaults as the daemon (daemon/dynamo_lens/config.py)', (t) => {
    const candidates = [path.join(ROOT, '.venv', 'bin', 'python'), 'python3'];
    const aliases: Record<string, string> = {
      checksOnSave: 'checks_on_save',
      memoryLimitMb: 'memory_limit_mb',
      timingThreads: 'timing_threads',
      guessTargets: 'guess_targets',
      keepDiagnosticsOnClose: 'keep_diagnostics_on_close',
      workerCount: 'workers',
    };
    const code = 'import json; from dynamo_lens.config import Config; print(json.dumps(Config().to_dict()))';
    let daemonDefaults: Record<string, unknown> | undefined;
    for (const py of candidates) {
      const r = spawnSync(py, ['-c', code], {
        env: { ...process.env, PYTHONPATH: path.join(ROOT, 'daemon') },
        encoding: 'utf8',
        timeout: 30000,
      });
      if (r.status === 0) {
        daemonDefaults = JSON.parse(r.stdout) as Record<string, unknown>;
        break;
      }
    }
    if (!daemonDefaults) {
      t.skip('no Python that can import dynamo_lens.config');
      return;
    }
    for (const key of SERVER_SETTING_KEYS) {
      const pyKey = aliases[key] ?? key;
      assert.ok(pyKey in daemonDefaults, `config.py knows ${key}`);
      assert.deepEqual(props[`dynamoLens.${key}`].default, daemonDefaults[pyKey], `default of dynamoLens.${key}`);
    }
  });
});
