import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, createSystemClock } from './clock.ts';

describe('manual clock', () => {
  it('starts at the given time and only moves on advance()', async () => {
    const clock = createManualClock(1_000);
    assert.equal(clock.now(), 1_000);
    await clock.advance(250);
    assert.equal(clock.now(), 1_250);
  });

  it('fires due timers in time order, ties in creation order, with now() at the due time', async () => {
    const clock = createManualClock();
    const fired: Array<[string, number]> = [];
    clock.setTimer(() => fired.push(['c', clock.now()]), 300);
    clock.setTimer(() => fired.push(['a', clock.now()]), 100);
    clock.setTimer(() => fired.push(['b1', clock.now()]), 200);
    clock.setTimer(() => fired.push(['b2', clock.now()]), 200);
    clock.setTimer(() => fired.push(['late', clock.now()]), 301);
    await clock.advance(300);
    assert.deepEqual(fired, [
      ['a', 100],
      ['b1', 200],
      ['b2', 200],
      ['c', 300],
    ]);
    assert.equal(clock.pendingTimers(), 1);
  });

  it('fires timers scheduled by timers when they fall inside the window', async () => {
    const clock = createManualClock();
    const fired: number[] = [];
    const tick = (): void => {
      fired.push(clock.now());
      clock.setTimer(tick, 100);
    };
    clock.setTimer(tick, 100);
    await clock.advance(350);
    assert.deepEqual(fired, [100, 200, 300]);
    assert.equal(clock.pendingTimers(), 1);
  });

  it('lets async work started by a timer finish before the next timer fires', async () => {
    const clock = createManualClock();
    const log: string[] = [];
    clock.setTimer(() => {
      void (async () => {
        for (let i = 0; i < 20; i++) await Promise.resolve();
        await new Promise<void>((resolve) => setImmediate(resolve));
        log.push(`async done at ${clock.now()}`);
        clock.setTimer(() => log.push(`follow-up at ${clock.now()}`), 50);
      })();
    }, 100);
    clock.setTimer(() => log.push(`second timer at ${clock.now()}`), 120);
    await clock.advance(200);
    assert.deepEqual(log, ['async done at 100', 'second timer at 120', 'follow-up at 150']);
  });

  it('clearTimer cancels and pendingTimers counts', async () => {
    const clock = createManualClock();
    let fired = 0;
    const h = clock.setTimer(() => fired++, 10);
    clock.setTimer(() => fired++, 20);
    assert.equal(clock.pendingTimers(), 2);
    clock.clearTimer(h);
    clock.clearTimer(h);
    assert.equal(clock.pendingTimers(), 1);
    await clock.advance(100);
    assert.equal(fired, 1);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('ignores handles of another clock', () => {
    const a = createManualClock();
    const b = createManualClock();
    a.setTimer(() => {}, 10);
    const hb = b.setTimer(() => {}, 10);
    a.clearTimer(hb);
    assert.equal(a.pendingTimers(), 1);
  });

  it('rejects negative and overlapping advances', async () => {
    const clock = createManualClock();
    await assert.rejects(clock.advance(-1), RangeError);
    const first = clock.advance(10);
    await assert.rejects(clock.advance(10), /already in progress/);
    await first;
    assert.equal(clock.now(), 10);
  });
});

describe('system clock', () => {
  it('fires a timer and can clear one', async () => {
    const clock = createSystemClock();
    const fired: string[] = [];
    const cleared = clock.setTimer(() => fired.push('cleared'), 0);
    clock.clearTimer(cleared);
    // The clock's timers are unref()'d, so something else must keep the loop
    // alive while we wait for one (a ref'd interval that never needs to fire).
    const keepAlive = setInterval(() => {}, 60_000);
    try {
      await new Promise<void>((resolve) => clock.setTimer(resolve, 0));
    } finally {
      clearInterval(keepAlive);
    }
    assert.deepEqual(fired, []);
    assert.ok(Math.abs(clock.now() - Date.now()) < 1_000);
  });
});
