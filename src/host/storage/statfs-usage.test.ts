import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { usageFromStatfs } from './statfs-usage.ts';

describe('usageFromStatfs', () => {
  it('computes space like df and inodes from files/ffree', () => {
    assert.deepEqual(usageFromStatfs({ bsize: 4096, blocks: 1000, bfree: 250, files: 100, ffree: 40 }), {
      space: { used: 750 * 4096, total: 1000 * 4096 },
      inodes: { used: 60, total: 100 },
    });
    assert.deepEqual(usageFromStatfs({ bsize: 4096, blocks: 10, bfree: 10, files: 0, ffree: 0 }).inodes, {
      used: 0,
      total: 0,
    });
  });
});
