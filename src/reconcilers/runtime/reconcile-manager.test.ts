import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDriftReporter } from '../../observers/drift.ts';
import { createManualClock } from './clock.ts';
import { createDeferred } from './deferred.ts';
import { createManagerHarness, fakeReconciler, fakeSettler, untilAborted } from './manager-harness.ts';
import { createReconcileManager } from './reconcile-manager.ts';
import { createTestLogger } from './test-logger.ts';

describe('reconcile manager', () => {
  it('startup sweep enqueues every key of every kind and survives a failing listKeys', async () => {
    const t = createManagerHarness({ a: ['a1', 'a2'], broken: ['x'], b: ['b1'] });
    t.r('broken').listKeysError = new Error('db down');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(
      t.r('a').calls.map((c) => [c.key, c.reason, c.attempt]),
      [
        ['a1', 'startup', 0],
        ['a2', 'startup', 0],
      ],
    );
    assert.deepEqual(
      t.r('b').calls.map((c) => c.key),
      ['b1'],
    );
    assert.equal(t.r('broken').calls.length, 0);
    const errors = t.log.at('error', 'listKeys failed');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.obj.kind, 'broken');
    await t.manager.stop();
  });

  it('a key enqueued before start() is reconciled only once started (desired state set at start comes first)', async () => {
    const t = createManagerHarness({ box: [] });
    t.manager.enqueue('box', 'early', 'drift');
    await new Promise((r) => setImmediate(r));
    assert.equal(t.r('box').calls.length, 0, 'nothing runs before start()');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(
      t.r('box').calls.map((c) => [c.key, c.reason]),
      [['early', 'drift']],
    );
    await t.manager.stop();
  });

  it('settles converged operations with the returned generation', async () => {
    const t = createManagerHarness({ box: ['k1', 'k2'] });
    t.r('box').impl = async (key) =>
      key === 'k1' ? { observedGeneration: 7, facts: { done: 1 } } : { facts: { lost: true } };
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(t.settler.calls, [['converged', 'box', 'k1', 7]]);
    assert.deepEqual(t.settler.facts, [['box', 'k1', { done: 1 }]], 'facts go with the convergence they came with');
    assert.equal(t.manager.status('box', 'k1'), undefined);
    await t.manager.stop();
  });

  it('enqueueAfter runs the key when its delay is over, on the clock alone (no poll, no other trigger)', async () => {
    const t = createManagerHarness({ container: ['c1'] });
    await t.manager.start();
    await t.manager.idle();
    const drift = createDriftReporter({ enqueue: t.manager.enqueue, enqueueAfter: t.manager.enqueueAfter });
    drift.reportAfter('container', 'c1', 1_000, 'observed STOPPED, desired running (crash loop backoff)');
    await t.clock.advance(999);
    assert.equal(t.r('container').calls.length, 1, 'only the startup sweep so far');
    await t.clock.advance(1);
    await t.manager.idle();
    assert.deepEqual(
      t.r('container').calls.map((c) => [c.at, c.reason]),
      [
        [0, 'startup'],
        [1_000, 'drift: observed STOPPED, desired running (crash loop backoff)'],
      ],
    );
    // The next backoff, longer: again at its time exactly.
    drift.reportAfter('container', 'c1', 2_000, 'again');
    await t.clock.advance(2_000);
    await t.manager.idle();
    assert.deepEqual(t.r('container').calls.at(-1)?.at, 3_000);
    assert.throws(() => t.manager.enqueueAfter('nope', 'k', 1, 'x'), /unknown reconciler kind/);
    await t.manager.stop();
  });

  it('requeueAfterMs calls the reconciler again after a success', async () => {
    const t = createManagerHarness({ box: ['k'] });
    t.r('box').impl = async (_key, ctx) => (ctx.reason === 'startup' ? { requeueAfterMs: 3000 } : {});
    await t.manager.start();
    await t.manager.idle();
    await t.clock.advance(2999);
    assert.equal(t.r('box').calls.length, 1);
    await t.clock.advance(1);
    assert.deepEqual(
      t.r('box').calls.map((c) => [c.at, c.reason]),
      [
        [0, 'startup'],
        [3000, 'requeue'],
      ],
    );
    await t.clock.advance(60_000);
    assert.equal(t.r('box').calls.length, 2);
    await t.manager.stop();
  });

  it('resyncs every key periodically and picks up new keys', async () => {
    const t = createManagerHarness({ box: ['k1'] }, { resyncIntervalMs: 60_000 });
    await t.manager.start();
    await t.manager.idle();
    t.r('box').keys.push('k2');
    await t.clock.advance(59_999);
    assert.equal(t.r('box').calls.length, 1);
    await t.clock.advance(1);
    await t.clock.advance(60_000);
    assert.deepEqual(
      t.r('box').calls.map((c) => [c.key, c.at, c.reason]),
      [
        ['k1', 0, 'startup'],
        ['k1', 60_000, 'resync'],
        ['k2', 60_000, 'resync'],
        ['k1', 120_000, 'resync'],
        ['k2', 120_000, 'resync'],
      ],
    );
    await t.manager.stop();
    assert.equal(t.clock.pendingTimers(), 0);
  });

  it('stop() aborts in-flight reconciles, waits for them and stops all timers', async () => {
    const t = createManagerHarness({ box: ['slow', 'failing'] });
    const cleanedUp = createDeferred<void>();
    let cleanupDone = false;
    t.r('box').impl = async (key, ctx) => {
      if (key === 'failing') throw new Error('transient');
      await untilAborted(key, ctx).catch(() => {});
      await cleanedUp.promise;
      cleanupDone = true;
      throw new Error('aborted');
    };
    await t.manager.start();
    await t.clock.advance(0);
    const slow = t.r('box').calls.find((c) => c.key === 'slow');
    assert.ok(slow);
    let stopped = false;
    const stopping = t.manager.stop().then(() => (stopped = true));
    assert.equal(slow.signal.aborted, true);
    await t.clock.advance(0);
    assert.equal(stopped, false, 'waits for the in-flight reconcile to finish');
    cleanedUp.resolve();
    await stopping;
    assert.equal(cleanupDone, true);
    assert.equal(t.clock.pendingTimers(), 0, 'retry, resync and timeout timers are gone');
    const failedSlow = t.settler.calls.filter((c) => c[2] === 'slow');
    assert.deepEqual(failedSlow, [], 'a shutdown abort is not a reconcile failure');

    t.manager.enqueue('box', 'slow', 'late');
    await t.clock.advance(10 * 60_000);
    assert.equal(t.r('box').calls.length, 2);
  });

  it('coalesces triggers of a running key into exactly one more run', async () => {
    const t = createManagerHarness({ box: [] });
    const gate = createDeferred<void>();
    let active = 0;
    let maxActive = 0;
    t.r('box').impl = async (_key, ctx) => {
      active++;
      maxActive = Math.max(maxActive, active);
      if (ctx.reason === 'first') await gate.promise;
      active--;
      return {};
    };
    await t.manager.start();
    t.manager.enqueue('box', 'k', 'first');
    await t.clock.advance(0);
    for (let i = 0; i < 5; i++) t.manager.enqueue('box', 'k', `drift ${i}`);
    gate.resolve();
    await t.manager.idle();
    assert.deepEqual(
      t.r('box').calls.map((c) => c.reason),
      ['first', 'drift 0'],
    );
    assert.equal(maxActive, 1);
    await t.manager.stop();
  });

  it('runs at most `concurrency` reconciles at once', async () => {
    const t = createManagerHarness({ box: ['a', 'b', 'c', 'd', 'e'] }, { concurrency: 2 });
    const gates = new Map<string, ReturnType<typeof createDeferred<void>>>();
    t.r('box').impl = async (key) => {
      const gate = createDeferred<void>();
      gates.set(key, gate);
      await gate.promise;
      return {};
    };
    await t.manager.start();
    await t.clock.advance(0);
    assert.equal(t.r('box').calls.length, 2);
    gates.get('a')?.resolve();
    await t.clock.advance(0);
    assert.equal(t.r('box').calls.length, 3);
    for (const key of ['b', 'c', 'd', 'e']) {
      gates.get(key)?.resolve();
      await t.clock.advance(0);
    }
    await t.manager.idle();
    assert.equal(t.r('box').calls.length, 5);
    await t.manager.stop();
  });

  it('rejects unknown kinds, duplicate kinds and a second start', async () => {
    const t = createManagerHarness({ box: [] });
    assert.throws(() => t.manager.enqueue('nope', 'k', 'api'), /unknown reconciler kind: nope/);
    await t.manager.start();
    await assert.rejects(t.manager.start(), /already started/);
    await t.manager.stop();
    const clock = createManualClock();
    const twice = [fakeReconciler('x', [], clock.now), fakeReconciler('x', [], clock.now)];
    assert.throws(
      () => createReconcileManager({ clock, reconcilers: twice, settler: fakeSettler(), log: createTestLogger() }),
      /duplicate reconciler kind: x/,
    );
  });
});
