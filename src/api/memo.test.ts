import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMemo } from './memo.ts';

test('reads once per TTL, shares a read between concurrent callers, re-reads after invalidate', async () => {
  let t = 0;
  let reads = 0;
  const m = createMemo(
    async () => ++reads,
    1000,
    () => t,
  );
  assert.deepEqual(await Promise.all([m.get(), m.get(), m.get()]), [1, 1, 1]);
  t = 999;
  assert.equal(await m.get(), 1);
  t = 1000;
  assert.equal(await m.get(), 2);
  m.invalidate();
  assert.equal(await m.get(), 3);
});
