import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBootSequencer, wavesOf } from './boot-sequencer.ts';

const tick = () => new Promise((r) => setImmediate(r));

test('waves: equal priority runs, each ending after a container with a delay', () => {
  const o = (id: string, priority: number, delayMs = 0) => ({ id, priority, delayMs });
  assert.deepEqual(
    wavesOf([o('a', 9), o('b', 9, 5), o('c', 9), o('d', 1), o('e', 1)]).map((w) => w.map((x) => x.id)),
    [['a', 'b'], ['c'], ['d', 'e']],
  );
  assert.deepEqual(wavesOf([]), []);
});

test('one priority starts together, up to the concurrency; the next waits for the whole wave, then its delay', async () => {
  const events: string[] = [];
  const waiters = new Map<string, (ok: boolean) => void>();
  const seq = createBootSequencer({
    order: [
      { id: 'a1', priority: 10, delayMs: 0 },
      { id: 'a2', priority: 10, delayMs: 0 },
      { id: 'a3', priority: 10, delayMs: 30 },
      { id: 'b1', priority: 0, delayMs: 0 },
    ],
    concurrency: 2,
    enqueue: (id) => events.push(`enqueue ${id}`),
    waitSettled: (id) => new Promise<boolean>((r) => waiters.set(id, r)),
    sleep: async (ms) => void events.push(`sleep ${ms}`),
  });
  assert.equal(seq.mayStart('a1'), false);
  assert.equal(seq.mayStart('other'), true, 'a container not in the plan may start');
  const running = seq.run();
  await tick();
  assert.deepEqual([seq.mayStart('a1'), seq.mayStart('a2'), seq.mayStart('a3')], [true, true, false], 'two at once');
  waiters.get('a2')!(true);
  await tick();
  assert.equal(seq.mayStart('a3'), true, 'a freed slot takes the next of the wave');
  assert.equal(seq.mayStart('b1'), false, 'the lower priority waits for the whole wave');
  waiters.get('a3')!(true);
  await tick();
  assert.equal(seq.mayStart('b1'), false, 'a1 is still starting');
  waiters.get('a1')!(true);
  await tick();
  await tick();
  assert.equal(seq.mayStart('b1'), true);
  waiters.get('b1')!(true);
  await running;
  assert.deepEqual(events, ['enqueue a1', 'enqueue a2', 'enqueue a3', 'sleep 30', 'enqueue b1']);
  assert.equal(seq.isDone(), true);
});

test('a failing start holds nobody up, and its delay is not waited (as LXD 5.0)', async () => {
  const events: string[] = [];
  const seq = createBootSequencer({
    order: [
      { id: 'bad', priority: 1, delayMs: 50 },
      { id: 'good', priority: 0, delayMs: 0 },
    ],
    concurrency: 4,
    enqueue: (id) => events.push(id),
    waitSettled: async (id) => {
      if (id === 'bad') throw new Error('lxc-start failed');
      return true;
    },
    sleep: async (ms) => void events.push(`sleep ${ms}`),
  });
  await seq.run();
  assert.deepEqual(events, ['bad', 'good']);
});
