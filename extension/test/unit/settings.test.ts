import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  CLIENT_ONLY_KEYS,
  SERVER_SETTING_KEYS,
  benchmarkDefaults,
  needsRestart,
  serverSettings,
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

describe('benchmarkDefaults', () => {
  it('takes well-shaped configured values as the picks\' preselection', () => {
    assert.deepEqual(benchmarkDefaults({ devices: ['cpu', 'cuda:1'], mode: 'max-autotune', dynamic: false }), {
      devices: ['cpu', 'cuda:1'],
      mode: 'max-autotune',
      dynamic: false,
    });
    assert.deepEqual(benchmarkDefaults({ devices: 'cpu' }).devices, ['cpu']);
  });

  it('falls back to the first choices for anything else (the daemon reports bad values)', () => {
    assert.deepEqual(benchmarkDefaults({ devices: 5, mode: '', dynamic: 'x' }), {
      devices: ['auto'],
      mode: 'default',
      dynamic: null,
    });
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
    const expected = [...SERVER_SETTING_KEYS, 'interpreter', 'runCommand', 'trace.server'].map((k) => `dynamoLens.${k}`);
    assert.deepEqual(Object.keys(props).sort(), expected.sort());
    for (const [key, p] of Object.entries(props)) {
      assert.ok(p.markdownDescription || p.description, `${key} has a description`);
      assert.ok(p.scope, `${key} has a scope`);
    }
    assert.deepEqual([...CLIENT_ONLY_KEYS].sort(), ['interpreter', 'runCommand', 'trace']);
  });

  it('has the same defaults as the daemon (daemon/dynamo_lens/config.py)', (t) => {
    const candidates = [path.join(ROOT, '.venv', 'bin', 'python'), 'python3'];
    // The daemon's own camelCase aliases: one table, in config.py.
    const code =
      'import json; from dynamo_lens.config import Config, ALIASES; ' +
      'print(json.dumps({"defaults": Config().to_dict(), "aliases": ALIASES}))';
    let daemonDefaults: Record<string, unknown> | undefined;
    let aliases: Record<string, string> = {};
    for (const py of candidates) {
      const r = spawnSync(py, ['-c', code], {
        env: { ...process.env, PYTHONPATH: path.join(ROOT, 'daemon') },
        encoding: 'utf8',
        timeout: 30000,
      });
      if (r.status === 0) {
        const out = JSON.parse(r.stdout) as {
          defaults: Record<string, unknown>;
          aliases: Record<string, string>;
        };
        daemonDefaults = out.defaults;
        aliases = out.aliases;
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
