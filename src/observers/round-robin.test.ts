import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRoundRobin } from './round-robin.ts';

test('round robin: every item within ceil(N/perTick) calls, never more than perTick a call', () => {
  const next = createRoundRobin(3);
  const items = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
  assert.deepEqual(
    [next(items), next(items), next(items)],
    [
      ['a', 'b', 'c'],
      ['d', 'e', 'f'],
      ['g', 'a', 'b'],
    ],
  );
  assert.deepEqual(next(items), ['c', 'd', 'e']);
  assert.deepEqual(next(['x', 'y']), ['x', 'y'], 'all of a small collection');
  assert.deepEqual(next(items), ['a', 'b', 'c'], 'and from the start after it');
  assert.deepEqual(next(items.slice(0, 4)), ['d', 'a', 'b'], 'the collection shrank under the cursor: wraps');
  assert.throws(() => createRoundRobin(0), RangeError);
});
