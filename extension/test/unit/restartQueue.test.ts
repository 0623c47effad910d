import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RestartQueue } from '../../src/restartQueue';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('RestartQueue', () => {
  it('never runs two jobs at once and coalesces a burst into one follow-up', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const gates: ReturnType<typeof deferred>[] = [];
    const q = new RestartQueue(async () => {
      running++;
      runs++;
      maxRunning = Math.max(maxRunning, running);
      const g = deferred();
      gates.push(g);
      await g.promise;
      running--;
    });
    const first = q.request();
    const burst = [q.request(), q.request(), q.request()];
    assert.equal(runs, 1);
    gates[0].resolve();
    await first;
    await new Promise((r) => setImmediate(r));
    assert.equal(runs, 2, 'one follow-up run for the whole burst');
    gates[1].resolve();
    await Promise.all(burst);
    assert.equal(runs, 2);
    assert.equal(maxRunning, 1);
    assert.equal(q.busy, false);
  });

  it('runs again after a failed run and reports the failure to its requester', async () => {
    let n = 0;
    const q = new RestartQueue(() => {
      n++;
      return n === 1 ? Promise.reject(new Error('boom')) : Promise.resolve();
    });
    await assert.rejects(q.request(), /boom/);
    await q.request();
    assert.equal(n, 2);
  });

  it('drops queued runs after dispose', async () => {
    let n = 0;
    const gate = deferred();
    const q = new RestartQueue(async () => {
      n++;
      await gate.promise;
    });
    const a = q.request();
    const b = q.request();
    const disposed = q.dispose();
    gate.resolve();
    await Promise.all([a, b, disposed]);
    assert.equal(n, 1);
    await q.request();
    assert.equal(n, 1);
  });
});
