import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { doctorMessage, parseDoctor, runDoctor } from '../../src/doctor';
import type { ResolvedInterpreter } from '../../src/interpreter';

const INTERP: ResolvedInterpreter = { command: '/usr/bin/python3', source: 'path', reason: 'python3 on PATH' };

describe('parseDoctor', () => {
  it('reads the JSON report, even after other output', () => {
    const r = parseDoctor('sitecustomize says hi\n{"python": "3.11.7", "torch": "2.13.0", "missing": []}\n');
    assert.equal(r?.torch, '2.13.0');
    assert.deepEqual(r?.missing, []);
    assert.equal(parseDoctor('not json'), undefined);
    assert.equal(parseDoctor('{"python": "3.12", "torch": null, "missing": ["torch"]}')?.torch, null);
  });
});

describe('doctorMessage', () => {
  it('names the interpreter and torch when torch is missing', () => {
    const m = doctorMessage(INTERP, { report: { torch: null, missing: ['torch'] }, stderr: '' }, true);
    assert.equal(m?.severity, 'warning');
    assert.equal(m?.staticOnly, true);
    assert.match(m.message, /torch is not installed in \/usr\/bin\/python3 \(python3 on PATH\)/);
  });

  it('stays quiet about torch in Restricted Mode (no code runs anyway)', () => {
    assert.equal(doctorMessage(INTERP, { report: { torch: null, missing: ['torch'] }, stderr: '' }, false), undefined);
  });

  it('is an error when the interpreter cannot start', () => {
    const m = doctorMessage(INTERP, { spawnError: 'not found', stderr: '' }, true);
    assert.equal(m?.severity, 'error');
    assert.match(m.message, /cannot start the Python interpreter \/usr\/bin\/python3/);
  });

  it('lists other missing packages', () => {
    const m = doctorMessage(INTERP, { report: { torch: '2.13.0', missing: ['pygls', 'msgpack'] }, stderr: '' }, true);
    assert.match(m!.message, /missing pygls, msgpack/);
  });

  it('is silent when all is well or the report is unavailable', () => {
    assert.equal(doctorMessage(INTERP, { report: { torch: '2.13.0', missing: [] }, stderr: '' }, true), undefined);
    assert.equal(doctorMessage(INTERP, { failure: 'exit 2', stderr: '' }, true), undefined);
  });
});

describe('runDoctor', () => {
  it('reports a missing interpreter as a spawn error', async () => {
    const o = await runDoctor('/definitely/not/a/python', { env: process.env, cwd: os.tmpdir(), timeoutMs: 5000 });
    assert.equal(o.spawnError, 'not found');
  });

  it('runs `<python> -m dynamo_lens doctor --json` and parses its output', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dl-doctor-'));
    const fake = path.join(dir, 'python');
    fs.writeFileSync(fake, '#!/bin/sh\necho "args: $*" >&2\necho \'{"python": "3.11.7", "torch": "2.13.0", "missing": []}\'\n');
    fs.chmodSync(fake, 0o755);
    const o = await runDoctor(fake, { env: process.env, cwd: dir, timeoutMs: 5000 });
    assert.equal(o.report?.torch, '2.13.0');
    assert.match(o.stderr, /args: -m dynamo_lens doctor --json/);
    fs.rmSync(dir, { recursive: true });
  });
});
