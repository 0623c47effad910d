import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plural } from '../../src/words';

describe('plural', () => {
  it('counts regular and irregular nouns', () => {
    assert.equal(plural(1, 'finding'), '1 finding');
    assert.equal(plural(0, 'file'), '0 files');
    assert.equal(plural(2, 'cache entry', 'cache entries'), '2 cache entries');
    assert.equal(plural(1, 'cache entry', 'cache entries'), '1 cache entry');
  });
});
