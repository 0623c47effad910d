import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeStatus, parseStatus } from '../../src/status';

describe('describeStatus', () => {
  it('shows torch, devices and idle when ready', () => {
    const v = describeStatus({ state: 'ready', torch: '2.13.0', devices: ['cpu', 'cuda:0'], jobs: 0 }, { trusted: true, phase: 'running' });
    assert.equal(v.text, 'Dynamo Lens: idle · torch 2.13.0 · cpu, cuda:0');
    assert.equal(v.severity, 'information');
    assert.equal(v.busy, false);
  });

  it('shows busy with the job count', () => {
    const v = describeStatus({ state: 'busy', torch: '2.13.0', devices: ['cpu'], jobs: 2 }, { trusted: true, phase: 'running' });
    assert.match(v.text, /^Dynamo Lens: busy \(2 jobs\) · torch 2\.13\.0 · cpu$/);
    assert.equal(v.busy, true);
  });

  it('explains Restricted Mode', () => {
    const v = describeStatus(undefined, { trusted: false, phase: 'running' });
    assert.equal(v.text, 'Dynamo Lens: Restricted Mode');
    assert.match(v.detail, /not trusted/);
    assert.equal(v.severity, 'warning');
    const fromServer = describeStatus({ state: 'restricted', message: 'untrusted: static hints only' }, { trusted: false, phase: 'running' });
    assert.equal(fromServer.detail, 'untrusted: static hints only');
  });

  it('shows the last error with its detail', () => {
    const v = describeStatus({ state: 'error', message: 'worker crashed (SIGSEGV) on models/bad.py' }, { trusted: true, phase: 'running' });
    assert.equal(v.severity, 'error');
    assert.match(v.detail, /SIGSEGV/);
    const failed = describeStatus(undefined, { trusted: true, phase: 'failed', clientError: 'python3 not found', interpreter: 'python3' });
    assert.equal(failed.text, 'Dynamo Lens: error');
    assert.match(failed.detail, /python3 not found — Interpreter: python3/);
  });

  it('says static only when torch is missing', () => {
    const v = describeStatus({ state: 'ready', torch: null, devices: [] }, { trusted: true, phase: 'running', staticOnly: 'no torch in /usr/bin/python3' });
    assert.match(v.text, /static only/);
    assert.equal(v.severity, 'warning');
    const workerFailed = describeStatus(
      { state: 'error', message: 'worker failed to start: No module named torch' },
      { trusted: true, phase: 'running', staticOnly: 'no torch in /usr/bin/python3' },
    );
    assert.match(workerFailed.text, /static only/);
    assert.match(workerFailed.detail, /no torch in \/usr\/bin\/python3 — worker failed to start/);
  });

  it('is busy while starting', () => {
    assert.equal(describeStatus(undefined, { trusted: true, phase: 'starting' }).busy, true);
  });
});

describe('parseStatus', () => {
  it('accepts a contract payload and rejects others', () => {
    assert.deepEqual(parseStatus({ state: 'busy', torch: '2.13.0', devices: ['cpu', 3], jobs: 1 }), {
      state: 'busy',
      torch: '2.13.0',
      devices: ['cpu'],
      jobs: 1,
      message: '',
    });
    assert.equal(parseStatus({ state: 'sleeping' }), undefined);
    assert.equal(parseStatus('ready'), undefined);
  });
});
