import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  bundledDir,
  daemonCwd,
  daemonEnv,
  daemonPythonPath,
  expandPath,
  findExecutable,
  resolveInterpreter,
} from '../../src/interpreter';

describe('resolveInterpreter', () => {
  it('prefers the dynamoLens.interpreter setting', () => {
    const r = resolveInterpreter({ setting: '/opt/py/bin/python', pythonExtension: '/env/bin/python', trusted: true });
    assert.equal(r.command, '/opt/py/bin/python');
    assert.equal(r.source, 'setting');
    assert.match(r.reason, /dynamoLens\.interpreter/);
  });

  it('expands ${workspaceFolder} and relative paths in the setting', () => {
    const r = resolveInterpreter({ setting: '${workspaceFolder}/.venv/bin/python', workspaceFolder: '/ws', trusted: true });
    assert.equal(r.command, '/ws/.venv/bin/python');
    const rel = resolveInterpreter({ setting: '.venv/bin/python', workspaceFolder: '/ws', trusted: true });
    assert.equal(rel.command, '/ws/.venv/bin/python');
  });

  it('keeps a bare command name for a PATH lookup', () => {
    assert.equal(resolveInterpreter({ setting: 'python3.11', workspaceFolder: '/ws', trusted: true }).command, 'python3.11');
  });

  it('uses the Python extension environment when no setting is given', () => {
    const r = resolveInterpreter({ setting: '  ', pythonExtension: '/env/bin/python', trusted: true });
    assert.equal(r.command, '/env/bin/python');
    assert.equal(r.source, 'python-extension');
  });

  it('does not run the Python extension environment in Restricted Mode', () => {
    const r = resolveInterpreter({ pythonExtension: '/ws/.venv/bin/python', trusted: false, platform: 'linux' });
    assert.equal(r.command, 'python3');
    assert.equal(r.source, 'path');
    assert.match(r.reason, /Restricted Mode/);
  });

  it('does not run an interpreter inside the untrusted workspace, even from user settings', () => {
    const r = resolveInterpreter({ setting: '${workspaceFolder}/.venv/bin/python', workspaceFolder: '/ws', trusted: false, platform: 'linux' });
    assert.equal(r.command, 'python3');
    assert.match(r.reason, /inside the untrusted workspace/);
    const outside = resolveInterpreter({ setting: '/opt/py/bin/python', workspaceFolder: '/ws', trusted: false });
    assert.equal(outside.command, '/opt/py/bin/python');
    const sibling = resolveInterpreter({ setting: '/ws-other/bin/python', workspaceFolder: '/ws', trusted: false });
    assert.equal(sibling.command, '/ws-other/bin/python');
  });

  it('falls back to python3 on PATH (python on Windows)', () => {
    assert.equal(resolveInterpreter({ trusted: true, platform: 'linux' }).command, 'python3');
    assert.equal(resolveInterpreter({ trusted: true, platform: 'win32' }).command, 'python');
  });
});

describe('expandPath', () => {
  it('expands ~, ${userHome} and ${env:X}', () => {
    assert.equal(expandPath('~/py/bin/python', { home: '/home/u' }), '/home/u/py/bin/python');
    assert.equal(expandPath('${userHome}/x', { home: '/home/u' }), '/home/u/x');
    assert.equal(expandPath('${env:CONDA_PREFIX}/bin/python', { env: { CONDA_PREFIX: '/c' } }), '/c/bin/python');
  });
});

describe('findExecutable', () => {
  it('finds an executable on PATH and rejects a non-executable file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dl-find-'));
    const exe = path.join(dir, 'mypython');
    fs.writeFileSync(exe, '#!/bin/sh\n');
    fs.chmodSync(exe, 0o755);
    const plain = path.join(dir, 'notexec');
    fs.writeFileSync(plain, '');
    fs.chmodSync(plain, 0o644);
    const env = { PATH: ['/nonexistent', dir].join(path.delimiter) };
    assert.equal(findExecutable('mypython', env, 'linux'), exe);
    assert.equal(findExecutable('notexec', env, 'linux'), undefined);
    assert.equal(findExecutable(exe, {}, 'linux'), exe);
    assert.equal(findExecutable(path.join(dir, 'missing'), env, 'linux'), undefined);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('daemon environment', () => {
  it('puts the bundled daemon and libs first on PYTHONPATH', () => {
    const bundled = bundledDir('/ext');
    assert.equal(bundled, '/ext/extension/bundled');
    const p = daemonPythonPath(bundled, '/user/site', () => true);
    assert.deepEqual(p.split(path.delimiter), ['/ext/extension/bundled/daemon', '/ext/extension/bundled/libs', '/user/site']);
  });

  it('skips bundled directories that do not exist (development checkout)', () => {
    assert.equal(daemonPythonPath('/ext/extension/bundled', undefined, () => false), '');
    const env = daemonEnv('/definitely/not/here', { PATH: '/bin' });
    assert.equal(env.PYTHONPATH, undefined);
    assert.equal(env.PYTHONUNBUFFERED, '1');
  });

  it('never runs the daemon in the workspace directory', () => {
    assert.equal(daemonCwd('/ext/extension/bundled', '/ext', () => true), '/ext/extension/bundled');
    assert.equal(daemonCwd('/ext/extension/bundled', '/ext', () => false), '/ext');
  });
});
