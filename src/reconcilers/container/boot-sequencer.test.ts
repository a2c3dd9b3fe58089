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

test('one priority is released together; the next waits for the whole wave, then its delay', async () => {
  const events: string[] = [];
  const waiters = new Map<string, (ok: boolean) => void>();
  const seq = createBootSequencer({
    order: [
      { id: 'a1', priority: 10, delayMs: 0 },
      { id: 'a2', priority: 10, delayMs: 0 },
      { id: 'a3', priority: 10, delayMs: 30 },
      { id: 'b1', priority: 0, delayMs: 0 },
    ],
    concurrency: 3,
    enqueue: (id) => events.push(`enqueue ${id}`),
    waitSettled: (id) => new Promise<boolean>((r) => waiters.set(id, r)),
    sleep: async (ms) => void events.push(`sleep ${ms}`),
  });
  assert.equal(seq.mayStart('a1'), false);
  assert.equal(seq.mayStart('other'), true, 'a container not in the plan may start');
  const running = seq.run();
  await tick();
  assert.deepEqual(
    [seq.mayStart('a1'), seq.mayStart('a2'), seq.mayStart('a3')],
    [true, true, true],
    'the whole wave at once (as many as start at once)',
  );
  assert.equal(seq.mayStart('b1'), false, 'the lower priority waits for the whole wave');
  waiters.get('a2')!(true);
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

test('the lxc-starts of the plan run at most `concurrency` at once, in the order they asked; others are not bounded', async () => {
  const seq = createBootSequencer({
    order: ['a', 'b', 'c', 'd'].map((id) => ({ id, priority: 0, delayMs: 0 })),
    concurrency: 2,
    enqueue: () => {},
    waitSettled: () => new Promise<boolean>(() => {}),
    sleep: async () => {},
  });
  void seq.run();
  const began: string[] = [];
  const finish = new Map<string, () => void>();
  const start = (id: string) =>
    seq.start(id, () => {
      began.push(id);
      return new Promise<string>((r) => finish.set(id, () => r(id)));
    });
  const results = ['a', 'b', 'c', 'd', 'other'].map(start);
  await tick();
  assert.deepEqual(began, ['a', 'b', 'other'], 'two of the plan, and the one outside it');
  finish.get('b')!();
  assert.equal(await results[1], 'b');
  await tick();
  assert.deepEqual(began, ['a', 'b', 'other', 'c'], 'a freed slot goes to the next that asked');
  finish.get('a')!();
  await tick();
  assert.deepEqual(began, ['a', 'b', 'other', 'c', 'd']);
  for (const id of ['c', 'd', 'other']) finish.get(id)!();
  assert.deepEqual(await Promise.all(results), ['a', 'b', 'c', 'd', 'other']);
});

test('a big wave is released a few at a time: the next as soon as one is at its lxc-start, or settled without one', async () => {
  const waiters = new Map<string, (ok: boolean) => void>();
  const seq = createBootSequencer({
    order: ['a', 'b', 'c', 'd'].map((id) => ({ id, priority: 0, delayMs: 0 })),
    concurrency: 1,
    enqueue: () => {},
    waitSettled: (id) => new Promise<boolean>((r) => waiters.set(id, r)),
    sleep: async () => {},
  });
  const running = seq.run();
  await tick();
  const allowed = () => ['a', 'b', 'c', 'd'].filter((id) => seq.mayStart(id));
  assert.deepEqual(allowed(), ['a'], 'as many as start at once');
  let finishA!: () => void;
  const a = seq.start('a', () => new Promise<void>((r) => (finishA = r)));
  await tick();
  assert.deepEqual(allowed(), ['a', 'b'], 'a is at its lxc-start (still running)');
  waiters.get('b')!(false);
  await tick();
  await tick();
  assert.deepEqual(allowed(), ['a', 'b', 'c'], 'b failed before any start');
  const c = seq.start('c', async () => {});
  await tick();
  assert.deepEqual(allowed(), ['a', 'b', 'c', 'd'], 'c waits for a start slot, prepared');
  finishA();
  await Promise.all([a, c]);
  for (const id of ['a', 'c', 'd']) waiters.get(id)!(true);
  await running;
  assert.equal(seq.isDone(), true);
});

test('a start that throws frees its slot', async () => {
  const seq = createBootSequencer({
    order: [
      { id: 'a', priority: 0, delayMs: 0 },
      { id: 'b', priority: 0, delayMs: 0 },
    ],
    concurrency: 1,
    enqueue: () => {},
    waitSettled: () => new Promise<boolean>(() => {}),
    sleep: async () => {},
  });
  void seq.run();
  await assert.rejects(
    seq.start('a', async () => {
      throw new Error('lxc-start failed');
    }),
    /lxc-start failed/,
  );
  assert.equal(await seq.start('b', async () => 'ok'), 'ok');
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

test('waves stopped short (a delay that fails) queue every container the plan still held', async () => {
  const enqueued: string[] = [];
  const seq = createBootSequencer({
    order: [
      { id: 'a', priority: 10, delayMs: 5 },
      { id: 'b', priority: 0, delayMs: 0 },
      { id: 'c', priority: 0, delayMs: 0 },
    ],
    concurrency: 2,
    enqueue: (id) => enqueued.push(id),
    waitSettled: async () => true,
    sleep: async () => {
      throw new Error('no timer');
    },
  });
  await assert.rejects(seq.run(), /no timer/);
  assert.deepEqual(enqueued, ['a', 'b', 'c']);
  assert.equal(seq.mayStart('b'), true);
});
