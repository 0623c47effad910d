import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunSummary } from '../../src/protocol';
import { functionItem, functionsMessage, relativePath, summaryItem, summaryMessage } from '../../src/runSummary';

const row = {
  uri: 'file:///ws/models/gpt.py',
  line: 41,
  gbId: 'GB0170',
  what: 'data-dependent branching',
  count: 6,
  frames: 3,
  ranks: 'rank 1 only',
  compileSeconds: 1.234,
};

describe('summaryItem', () => {
  it('names the line and id, then what, how often, where and the compile time', () => {
    const item = summaryItem(row, '/ws');
    assert.equal(item.label, 'models/gpt.py:41 GB0170');
    assert.equal(item.description, 'data-dependent branching · 6× · 3 frames · 1.23 s compile · rank 1 only');
    assert.match(item.tooltip, /seen 6 time\(s\) in 3 compiled frame\(s\), rank 1 only/);
    assert.equal(item.line, 41);
  });

  it('leaves out ranks for a single-process run and an id torch did not give', () => {
    const item = summaryItem({ ...row, ranks: '', gbId: null, frames: 1, compileSeconds: 0.012 }, '/ws');
    assert.equal(item.label, 'models/gpt.py:41');
    assert.equal(item.description, 'data-dependent branching · 6× · 1 frame · 12 ms compile');
  });
});

describe('relativePath', () => {
  it('is relative inside the workspace and the file name outside it', () => {
    assert.equal(relativePath('file:///ws/a%20b/c.py', '/ws/'), 'a b/c.py');
    assert.equal(relativePath('file:///elsewhere/c.py', '/ws'), 'c.py');
  });
});

describe('summaryMessage', () => {
  const summary: RunSummary = {
    provenance: 'run "python train.py" at 14:02',
    loadedAt: 0,
    exitCode: 1,
    cancelled: false,
    torch: '2.13.0',
    dynamoSeconds: 0.5,
    inductorSeconds: 12.3,
    framesCompiled: 4,
    skipped: 2,
    rows: [row],
  };
  it('says which run, how it ended, and what compiling cost', () => {
    assert.equal(
      summaryMessage(summary),
      'run "python train.py" at 14:02 (exit code 1): 1 distinct graph break; compile time Dynamo 0.50 s, Inductor 12 s; 2 unreadable trace line(s) skipped',
    );
  });
  it('counts the breaks beyond the rows it was sent', () => {
    assert.match(summaryMessage({ ...summary, rowsNotShown: 2 }), /: 3 distinct graph breaks \(the costliest 1 listed\);/);
  });
  it('says how to get a run when there is none', () => {
    assert.match(summaryMessage(null), /Run File with Analysis/);
  });
});

describe('functionItem', () => {
  const fn = {
    uri: 'file:///ws/train.py',
    line: 30,
    name: 'forward',
    library: null,
    seconds: 2.5,
    dynamoSeconds: 1.25,
    inductorSeconds: 1.25,
    compiles: 3,
    graphs: 2,
    breaks: 1,
    recompiles: 2,
  };
  it('leads with the compile time, then where, the split and what compiling produced', () => {
    const item = functionItem(fn, '/ws');
    assert.equal(item.label, '2.50 s forward');
    assert.equal(item.description, 'train.py:30 · Dynamo 1.25 s · Inductor 1.25 s · 2 graphs · 1 break · 2 recompiles');
    assert.match(item.tooltip, /over 3 compilation\(s\)/);
  });
  it('names a library function at the line that called it', () => {
    const item = functionItem({ ...fn, library: 'torch/nn/modules/conv.py:370', breaks: 0, recompiles: 0 }, '/ws');
    assert.equal(item.label, '2.50 s forward (torch/nn/modules/conv.py:370, called here)');
    assert.equal(item.description, 'train.py:30 · Dynamo 1.25 s · Inductor 1.25 s · 2 graphs');
  });
  it('says how many functions the run compiled and how many are listed', () => {
    const base = { provenance: 'trace t', loadedAt: 0, exitCode: null, cancelled: false, torch: null, dynamoSeconds: 0, inductorSeconds: 0, framesCompiled: 1, skipped: 0, rows: [] };
    assert.equal(functionsMessage({ ...base, functions: [fn], functionsNotShown: 1 }), 'trace t: 2 compiled functions (the costliest 1 listed), the costliest to compile first');
    assert.equal(functionsMessage({ ...base, functions: [] }), 'trace t: no compiled function of this workspace');
  });
});
