import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBootSequencer } from './boot-sequencer.ts';

test('releases containers one at a time, in order, with delays; unplanned ones may always start', async () => {
  const events: string[] = [];
  const waiters = new Map<string, () => void>();
  const seq = createBootSequencer({
    order: [
      { id: 'a', delayMs: 10 },
      { id: 'b', delayMs: 0 },
    ],
    enqueue: (id) => events.push(`enqueue ${id}`),
    waitSettled: (id) => new Promise<void>((r) => waiters.set(id, r)),
    sleep: async (ms) => void events.push(`sleep ${ms}`),
  });
  assert.equal(seq.mayStart('a'), false);
  assert.equal(seq.mayStart('other'), true);
  const running = seq.run();
  assert.equal(seq.mayStart('a'), true);
  assert.equal(seq.mayStart('b'), false, 'b waits for a');
  waiters.get('a')!();
  await new Promise((r) => setImmediate(r));
  assert.equal(seq.mayStart('b'), true);
  waiters.get('b')!();
  await running;
  assert.deepEqual(events, ['enqueue a', 'sleep 10', 'enqueue b']);
  assert.equal(seq.isDone(), true);
});

test('a failing start does not hold the others up', async () => {
  const started: string[] = [];
  const seq = createBootSequencer({
    order: [
      { id: 'bad', delayMs: 0 },
      { id: 'good', delayMs: 0 },
    ],
    enqueue: (id) => started.push(id),
    waitSettled: async (id) => {
      if (id === 'bad') throw new Error('lxc-start failed');
    },
    sleep: async () => {},
  });
  await seq.run();
  assert.deepEqual(started, ['bad', 'good']);
});
