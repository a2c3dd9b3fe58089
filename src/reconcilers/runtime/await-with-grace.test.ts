import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbandonedRunError, awaitWithGrace } from './await-with-grace.ts';
import { createManualClock } from './clock.ts';
import { createDeferred } from './deferred.ts';

describe('awaitWithGrace', () => {
  it('passes through the outcome of a run', async () => {
    const clock = createManualClock();
    const signal = new AbortController().signal;
    assert.equal(await awaitWithGrace(async () => 42, { clock, signal, graceMs: 10 }), 42);
    await assert.rejects(
      awaitWithGrace(async () => Promise.reject(new Error('nope')), { clock, signal, graceMs: 10 }),
      /nope/,
    );
    await assert.rejects(
      awaitWithGrace(
        () => {
          throw new Error('sync');
        },
        { clock, signal, graceMs: 10 },
      ),
      /sync/,
    );
    assert.equal(clock.pendingTimers(), 0);
  });

  it('waits for an aborted run that settles within the grace period', async () => {
    const clock = createManualClock();
    const ctrl = new AbortController();
    const work = createDeferred<string>();
    const p = awaitWithGrace(() => work.promise, { clock, signal: ctrl.signal, graceMs: 100 });
    ctrl.abort();
    await clock.advance(99);
    work.resolve('cleaned up');
    assert.equal(await p, 'cleaned up');
    assert.equal(clock.pendingTimers(), 0);
  });

  it('abandons a run that ignores its signal past the grace period', async () => {
    const clock = createManualClock();
    const ctrl = new AbortController();
    const seen: { err?: unknown } = {};
    const p = awaitWithGrace(() => new Promise<never>(() => {}), { clock, signal: ctrl.signal, graceMs: 100 }).catch(
      (err: unknown) => (seen.err = err),
    );
    await clock.advance(1_000);
    assert.ok(!('err' in seen), 'no abort, no deadline');
    ctrl.abort();
    await clock.advance(99);
    assert.ok(!('err' in seen));
    await clock.advance(1);
    await p;
    assert.ok(seen.err instanceof AbandonedRunError);
  });
});
