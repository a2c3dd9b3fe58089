import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeferred } from './deferred.ts';
import { createManagerHarness } from './manager-harness.ts';

describe('reconcile manager: startup tiers', () => {
  it('every key of a lower tier runs once before any key of a higher tier is queued; a watch of the lower tier waits too', async () => {
    const pool = createDeferred<void>();
    const order: string[] = [];
    const t = createManagerHarness(
      { pool: ['p1'], network: ['n1'], container: ['c1', 'c2'] },
      { watches: [{ kind: 'pool', map: async () => [{ kind: 'container', key: 'c9' }] }] },
    );
    t.r('pool').startupTier = 0;
    t.r('network').startupTier = 0;
    t.r('pool').impl = async (key) => {
      order.push(key);
      await pool.promise;
      return { observedGeneration: 1 };
    };
    t.r('network').impl = async (key) => (order.push(key), {});
    t.r('container').impl = async (key) => (order.push(key), {});
    t.manager.enqueue('container', 'early', 'drift');
    const started = t.manager.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(order.sort(), ['n1', 'p1'], 'only tier 0 runs while a pool is converging');
    pool.resolve();
    await started;
    await t.manager.idle();
    assert.deepEqual(
      order.slice(2).sort(),
      ['c1', 'c2', 'c9', 'early'],
      "tier 1, the early key and the watch's key run after",
    );
    assert.equal(t.log.at('info', 'startup tier reconciled').length, 1);
    await t.manager.stop();
  });

  it('a key enqueued before its tier and listed by its sweep runs once, with the first reason', async () => {
    const t = createManagerHarness({ pool: ['p1'], container: ['c1', 'c2'] });
    t.r('pool').startupTier = 0;
    t.manager.enqueue('container', 'c1', 'drift');
    t.manager.enqueue('pool', 'p1', 'drift');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(
      t.r('container').calls.map((c) => [c.key, c.reason]),
      [
        ['c1', 'drift'],
        ['c2', 'startup'],
      ],
    );
    assert.deepEqual(
      t.r('pool').calls.map((c) => [c.key, c.reason]),
      [['p1', 'drift']],
    );
    await t.manager.stop();
  });

  it('a tier that does not finish in time lets the next one go, and says so; a failing key counts as run', async () => {
    const t = createManagerHarness({ pool: ['stuck', 'broken'], container: ['c1'] }, { startupTierTimeoutMs: 1000 });
    t.r('pool').startupTier = 0;
    t.r('pool').impl = async (key, ctx) => {
      if (key === 'broken') throw new Error('not mounted');
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
      return {};
    };
    const started = t.manager.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(t.r('container').calls.length, 0);
    await t.clock.advance(1000);
    await started;
    for (let i = 0; i < 50 && t.r('container').calls.length === 0; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      t.r('container').calls.map((c) => c.key),
      ['c1'],
    );
    assert.equal(t.log.at('warn', 'startup tier not done in time; going on').length, 1);
    await t.manager.stop();
  });
});
