import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deviceChoices, dynamicChoices, modeChoices, targetChoices } from '../../src/pick';

describe('targetChoices', () => {
  it('lists the active file first with workspace-relative locations', () => {
    const targets = [
      { target: 'models/gpt.py::compile_example', uri: 'file:///ws/models/gpt.py', line: 40, kind: 'example' },
      { target: 'models/cnn.py::SmallCNN', uri: 'file:///ws/models/cnn.py', line: 12, kind: 'guess' },
    ];
    const c = targetChoices(targets, 'file:///ws/models/cnn.py', '/ws');
    assert.equal(c[0].label, 'SmallCNN');
    assert.equal(c[0].description, 'models/cnn.py:12');
    assert.match(c[0].detail ?? '', /guess · in the active file/);
    assert.equal(c[1].label, 'compile_example');
  });
});

describe('deviceChoices', () => {
  it('pre-picks all devices for auto and the configured ones otherwise', () => {
    assert.deepEqual(deviceChoices(['cpu', 'cuda:0'], ['auto']).map((c) => c.picked), [true, true]);
    assert.deepEqual(deviceChoices(['cpu', 'cuda:0', 'cuda:1'], ['cuda']).map((c) => c.picked), [false, true, true]);
    assert.deepEqual(deviceChoices(['cpu'], ['cuda:3']).map((c) => c.picked), [true], 'nothing matches: pick all');
    assert.deepEqual(deviceChoices([], ['auto']).map((c) => c.value), ['cpu']);
  });
});

describe('mode and dynamic choices', () => {
  it('puts the configured value first', () => {
    assert.deepEqual(modeChoices('max-autotune').map((c) => c.value), ['max-autotune', 'default', 'reduce-overhead']);
    assert.equal(modeChoices('default').length, 3);
    assert.equal(modeChoices('max-autotune-no-cudagraphs')[0].value, 'max-autotune-no-cudagraphs');
    assert.deepEqual(dynamicChoices(true).map((c) => c.value), [true, false, null]);
    assert.deepEqual(dynamicChoices(null).map((c) => c.value), [null, false, true]);
  });
});
