import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBootSequencer } from './boot-sequencer.ts';

const tick = () => new Promise((r) => setImmediate(r));

test('one priority starts together, up to the concurrency; the next waits for the whole group, then its longest delay', async () => {
  const events: string[] = [];
  const waiters = new Map<string, () => void>();
  const seq = createBootSequencer({
    order: [
      { id: 'a1', priority: 10, delayMs: 5 },
      { id: 'a2', priority: 10, delayMs: 30 },
      { id: 'a3', priority: 10, delayMs: 0 },
      { id: 'b1', priority: 0, delayMs: 0 },
    ],
    concurrency: 2,
    enqueue: (id) => events.push(`enqueue ${id}`),
    waitSettled: (id) => new Promise<void>((r) => waiters.set(id, r)),
    sleep: async (ms) => void events.push(`sleep ${ms}`),
  });
  assert.equal(seq.mayStart('a1'), false);
  assert.equal(seq.mayStart('other'), true, 'a container not in the plan may start');
  const running = seq.run();
  await tick();
  assert.deepEqual([seq.mayStart('a1'), seq.mayStart('a2'), seq.mayStart('a3')], [true, true, false], 'two at once');
  waiters.get('a2')!();
  await tick();
  assert.equal(seq.mayStart('a3'), true, 'a freed slot takes the next of the group');
  assert.equal(seq.mayStart('b1'), false, 'the lower priority waits for the whole group');
  waiters.get('a3')!();
  await tick();
  assert.equal(seq.mayStart('b1'), false, 'a1 is still starting');
  waiters.get('a1')!();
  await tick();
  await tick();
  assert.equal(seq.mayStart('b1'), true);
  waiters.get('b1')!();
  await running;
  assert.deepEqual(events, ['enqueue a1', 'enqueue a2', 'enqueue a3', 'sleep 30', 'enqueue b1']);
  assert.equal(seq.isDone(), true);
});

test('a failing start does not hold the others up', async () => {
  const started: string[] = [];
  const seq = createBootSequencer({
    order: [
      { id: 'bad', priority: 1, delayMs: 0 },
      { id: 'good', priority: 0, delayMs: 0 },
    ],
    concurrency: 4,
    enqueue: (id) => started.push(id),
    waitSettled: async (id) => {
      if (id === 'bad') throw new Error('lxc-start failed');
    },
    sleep: async () => {},
  });
  await seq.run();
  assert.deepEqual(started, ['bad', 'good']);
});
