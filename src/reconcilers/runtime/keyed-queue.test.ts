import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, type ManualClock } from './clock.ts';
import { createDeferred, type Deferred } from './deferred.ts';
import { createKeyedQueue, type QueueItem } from './keyed-queue.ts';

/** A queue whose process() records every run and can be held open per key. */
function setup(opts: { concurrency?: number; hold?: boolean } = {}) {
  const clock: ManualClock = createManualClock(0);
  const runs: Array<QueueItem & { at: number }> = [];
  const gates = new Map<string, Deferred<void>[]>();
  const active = new Map<string, number>();
  let activeTotal = 0;
  let maxTotal = 0;
  let maxPerKey = 0;
  const queue = createKeyedQueue({
    clock,
    concurrency: opts.concurrency ?? 4,
    process: async (item) => {
      runs.push({ ...item, at: clock.now() });
      const perKey = (active.get(item.key) ?? 0) + 1;
      active.set(item.key, perKey);
      activeTotal++;
      maxPerKey = Math.max(maxPerKey, perKey);
      maxTotal = Math.max(maxTotal, activeTotal);
      try {
        if (opts.hold) {
          const gate = createDeferred<void>();
          gates.set(item.key, [...(gates.get(item.key) ?? []), gate]);
          await gate.promise;
        }
      } finally {
        active.set(item.key, (active.get(item.key) ?? 1) - 1);
        activeTotal--;
      }
    },
  });
  /** Lets the oldest held run of `key` finish. */
  const release = (key: string): void => {
    const list = gates.get(key) ?? [];
    const gate = list.shift();
    assert.ok(gate, `no held run for ${key}`);
    gate.resolve();
  };
  const runsOf = (key: string) => runs.filter((r) => r.key === key);
  return {
    clock,
    queue,
    runs,
    runsOf,
    release,
    stats: () => ({ maxTotal, maxPerKey, activeTotal }),
  };
}

describe('keyed queue', () => {
  it('coalesces 10 adds made in the same tick into one run', async () => {
    const t = setup();
    for (let i = 0; i < 10; i++) t.queue.add('c', 'a', `r${i}`);
    assert.equal(t.queue.size(), 1);
    await t.queue.idle();
    assert.equal(t.runs.length, 1);
    assert.equal(t.runs[0]?.reason, 'r0');
  });

  it('coalesces 10 adds of a key that is waiting for a free slot into one run', async () => {
    const t = setup({ concurrency: 1, hold: true });
    t.queue.add('c', 'busy', 'first');
    await t.clock.advance(0);
    assert.equal(t.runs.length, 1);
    for (let i = 0; i < 10; i++) {
      t.queue.add('c', 'waiting', 'again');
      await t.clock.advance(0);
    }
    assert.equal(t.queue.size(), 1);
    assert.equal(t.runsOf('waiting').length, 0);
    t.release('busy');
    await t.clock.advance(0);
    t.release('waiting');
    await t.queue.idle();
    assert.equal(t.runsOf('waiting').length, 1);
  });

  it('serializes a key: adds during a run cause exactly one more run, never concurrent', async () => {
    const t = setup({ hold: true });
    t.queue.add('c', 'a', 'first');
    await t.clock.advance(0);
    assert.equal(t.runsOf('a').length, 1);
    for (let i = 0; i < 5; i++) {
      t.queue.add('c', 'a', `during-${i}`);
      await t.clock.advance(0);
    }
    // Still one run: the dirty key waits for the current run.
    assert.equal(t.runsOf('a').length, 1);
    assert.equal(t.queue.size(), 1);
    t.release('a');
    await t.clock.advance(0);
    assert.equal(t.runsOf('a').length, 2);
    assert.equal(t.runsOf('a')[1]?.reason, 'during-0');
    t.release('a');
    await t.queue.idle();
    assert.equal(t.runsOf('a').length, 2);
    assert.equal(t.stats().maxPerKey, 1);
  });

  it('runs different keys in parallel up to the concurrency limit and not beyond', async () => {
    const t = setup({ concurrency: 2, hold: true });
    for (const key of ['a', 'b', 'c', 'd']) t.queue.add('c', key, 'go');
    await t.clock.advance(0);
    assert.deepEqual(
      t.runs.map((r) => r.key),
      ['a', 'b'],
    );
    assert.equal(t.stats().activeTotal, 2);
    t.release('a');
    await t.clock.advance(0);
    assert.deepEqual(
      t.runs.map((r) => r.key),
      ['a', 'b', 'c'],
    );
    t.release('b');
    t.release('c');
    await t.clock.advance(0);
    t.release('d');
    await t.queue.idle();
    assert.equal(t.runs.length, 4);
    assert.equal(t.stats().maxTotal, 2);
  });

  it('addAfter fires only once the clock reaches the delay', async () => {
    const t = setup();
    t.queue.addAfter('c', 'a', 1000, 'later');
    assert.equal(t.queue.delayedCount(), 1);
    await t.clock.advance(999);
    assert.equal(t.runs.length, 0);
    await t.clock.advance(1);
    assert.equal(t.runs.length, 1);
    assert.deepEqual(t.runs[0], { kind: 'c', key: 'a', reason: 'later', at: 1000 });
    assert.equal(t.queue.delayedCount(), 0);
  });

  it('keeps the earliest-due delayed add of a key', async () => {
    const t = setup();
    t.queue.addAfter('c', 'a', 1000, 'slow');
    t.queue.addAfter('c', 'a', 300, 'fast');
    t.queue.addAfter('c', 'a', 2000, 'slower');
    assert.equal(t.clock.pendingTimers(), 1);
    await t.clock.advance(5000);
    assert.deepEqual(
      t.runs.map((r) => [r.at, r.reason]),
      [[300, 'fast']],
    );
  });

  it('an immediate add cancels a pending delayed add of the key', async () => {
    const t = setup();
    t.queue.addAfter('c', 'a', 1000, 'later');
    t.queue.addAfter('c', 'b', 1000, 'later');
    t.queue.add('c', 'a', 'now');
    await t.queue.idle();
    assert.equal(t.runsOf('a').length, 1);
    await t.clock.advance(2000);
    assert.deepEqual(
      t.runsOf('a').map((r) => r.reason),
      ['now'],
    );
    assert.deepEqual(
      t.runsOf('b').map((r) => r.reason),
      ['later'],
    );
    assert.equal(t.clock.pendingTimers(), 0);
  });

  it('cancelDelayed drops a pending delayed add', async () => {
    const t = setup();
    t.queue.addAfter('c', 'a', 100, 'later');
    t.queue.cancelDelayed('c', 'a');
    await t.clock.advance(1000);
    assert.equal(t.runs.length, 0);
    assert.equal(t.clock.pendingTimers(), 0);
  });

  it('treats the same key of different kinds as different items', async () => {
    const t = setup();
    t.queue.add('x', 'a', 'r');
    t.queue.add('y', 'a', 'r');
    await t.queue.idle();
    assert.deepEqual(t.runs.map((r) => r.kind).sort(), ['x', 'y']);
  });

  it('idle() waits for running and dirty keys but not for delayed adds', async () => {
    const t = setup({ hold: true });
    t.queue.addAfter('c', 'later', 10_000, 'delayed');
    let idle = false;
    void t.queue.idle().then(() => (idle = true));
    await t.clock.advance(0);
    assert.equal(idle, true, 'a delayed add alone is idle');

    t.queue.add('c', 'a', 'go');
    idle = false;
    void t.queue.idle().then(() => (idle = true));
    await t.clock.advance(0);
    t.queue.add('c', 'a', 'dirty');
    t.release('a');
    await t.clock.advance(0);
    assert.equal(idle, false, 'dirty re-run still pending');
    t.release('a');
    await t.clock.advance(0);
    assert.equal(idle, true);
  });

  it('keeps going when process rejects and reports the error', async () => {
    const clock = createManualClock();
    const errors: unknown[] = [];
    const seen: string[] = [];
    const queue = createKeyedQueue({
      clock,
      concurrency: 1,
      process: async (item) => {
        seen.push(item.key);
        if (item.key === 'bad') throw new Error('boom');
      },
      onError: (err) => errors.push(err),
    });
    queue.add('c', 'bad', 'r');
    queue.add('c', 'good', 'r');
    await queue.idle();
    assert.deepEqual(seen, ['bad', 'good']);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /boom/);
  });

  it('shutdown waits for in-flight runs, drops waiting work and timers, and ignores later adds', async () => {
    const t = setup({ concurrency: 1, hold: true });
    t.queue.add('c', 'a', 'go');
    t.queue.add('c', 'b', 'go');
    t.queue.addAfter('c', 'c', 100, 'later');
    await t.clock.advance(0);
    let done = false;
    const shutdown = t.queue.shutdown().then(() => (done = true));
    await t.clock.advance(0);
    assert.equal(done, false, 'waits for the in-flight run');
    assert.equal(t.clock.pendingTimers(), 0);
    t.release('a');
    await shutdown;
    t.queue.add('c', 'd', 'late');
    t.queue.addAfter('c', 'e', 10, 'late');
    await t.clock.advance(1000);
    assert.deepEqual(
      t.runs.map((r) => r.key),
      ['a'],
    );
    await t.queue.idle();
  });

  it('rejects a bad concurrency', () => {
    const clock = createManualClock();
    assert.throws(() => createKeyedQueue({ clock, concurrency: 0, process: async () => {} }), RangeError);
  });
});
