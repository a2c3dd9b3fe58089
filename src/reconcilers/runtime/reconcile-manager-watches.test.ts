import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManagerHarness } from './manager-harness.ts';
import type { Watch } from './watches.ts';

/** Pool p1 holds containers c1 and c2 (c3 is elsewhere); the mapping's calls are recorded. */
function poolWatch(maps: string[], onPool: Record<string, string[]> = { p1: ['c1', 'c2'] }): Watch {
  return {
    kind: 'pool',
    async map(key) {
      maps.push(key);
      return (onPool[key] ?? []).map((id) => ({ kind: 'container', key: id }));
    },
  };
}

const reasons = (calls: { key: string; at: number; reason: string }[]) => calls.map((c) => [c.key, c.at, c.reason]);

describe('reconcile manager watches', () => {
  it('a container waiting on a broken pool runs again as soon as the pool converges, not after its backoff', async () => {
    const maps: string[] = [];
    let poolOk = false;
    const t = createManagerHarness(
      { pool: ['p1'], container: ['c1', 'c3'] },
      { watches: [poolWatch(maps)], backoff: { baseMs: 10_000, maxMs: 60_000 } },
    );
    t.r('pool').impl = async () => {
      if (!poolOk) throw new Error('pool not mounted');
      return { observedGeneration: 1 };
    };
    t.r('container').impl = async (key) => {
      if (key === 'c1' && !poolOk) throw new Error('pool p1 is not ready');
      return { observedGeneration: 1 };
    };
    await t.manager.start();
    await t.manager.idle();
    assert.equal(t.manager.status('container', 'c1')?.nextRetryAt, 10_000, 'c1 waits for its backoff');
    assert.deepEqual(maps, [], 'a failing pool wakes nobody');

    poolOk = true;
    await t.clock.advance(5_000);
    t.manager.enqueue('pool', 'p1', 'drift: fixed');
    await t.manager.idle();
    assert.deepEqual(maps, ['p1']);
    assert.deepEqual(
      reasons(t.r('container').calls).filter(([, at]) => at === 5_000),
      [
        ['c1', 5_000, 'watch: pool p1 recovered'],
        ['c2', 5_000, 'watch: pool p1 recovered'],
      ],
      'the containers on the pool, at once; c3 (elsewhere) not',
    );
    assert.equal(t.manager.status('container', 'c1'), undefined, 'c1 converged');
    await t.clock.advance(60_000);
    assert.equal(t.r('container').calls.filter((c) => c.key === 'c1').length, 2, 'its backoff retry was dropped');
    await t.manager.stop();
  });

  it('dependents are queued on the first convergence and on a new generation, not on every resync of the same one', async () => {
    const maps: string[] = [];
    let generation = 1;
    const t = createManagerHarness(
      { pool: ['p1'], container: [] },
      { watches: [poolWatch(maps)], resyncIntervalMs: 60_000 },
    );
    t.r('pool').impl = async () => ({ observedGeneration: generation });
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(maps, ['p1'], 'first convergence');
    await t.clock.advance(60_000);
    await t.manager.idle();
    assert.equal(t.r('pool').calls.length, 2, 'resynced');
    assert.deepEqual(maps, ['p1'], 'same generation: nobody woken');
    generation = 2;
    t.manager.enqueue('pool', 'p1', 'api');
    await t.manager.idle();
    assert.deepEqual(maps, ['p1', 'p1'], 'a change of the pool');
    assert.deepEqual(
      reasons(t.r('container').calls).map(([key, , reason]) => [key, reason]),
      [
        ['c1', 'watch: pool p1 converged'],
        ['c2', 'watch: pool p1 converged'],
        ['c1', 'watch: pool p1 converged'],
        ['c2', 'watch: pool p1 converged'],
      ],
    );
    await t.manager.stop();
  });

  it('a key mapped while already waiting runs once; nothing is mapped when the settler fails or the pool is gone', async () => {
    const maps: string[] = [];
    const t = createManagerHarness(
      { pool: ['p1', 'gone'], container: ['c1'] },
      { watches: [poolWatch(maps, { p1: ['c1', 'c1'] })], concurrency: 1 },
    );
    t.r('pool').impl = async (key) => (key === 'gone' ? {} : { observedGeneration: 3 });
    t.settler.convergedError = new Error('db down');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(maps, [], 'the settler failed: not converged yet');
    t.settler.convergedError = undefined;
    await t.clock.advance(60_000);
    await t.manager.idle();
    assert.deepEqual(maps, ['p1'], 'converged once the settler recorded it');
    assert.equal(
      t.r('container').calls.filter((c) => c.reason.startsWith('watch:')).length,
      1,
      'c1 once, though mapped twice',
    );
    await t.manager.stop();
  });

  it('a failing mapping or an unknown mapped kind is logged; a watch of an unknown kind is refused', async () => {
    const t = createManagerHarness(
      { pool: ['p1'], container: [] },
      {
        watches: [
          { kind: 'pool', map: () => Promise.reject(new Error('query failed')) },
          {
            kind: 'pool',
            map: async () => [
              { kind: 'network', key: 'n1' },
              { kind: 'container', key: 'c9' },
            ],
          },
        ],
      },
    );
    t.r('pool').impl = async () => ({ observedGeneration: 1 });
    await t.manager.start();
    await t.manager.idle();
    assert.equal(t.log.at('error', 'watch mapping failed; dependents wait for their own retry').length, 1);
    assert.equal(t.log.at('error', 'watch mapped to a key that cannot be queued').length, 1);
    assert.deepEqual(
      t.r('container').calls.map((c) => c.key),
      ['c9'],
      'the other watch still ran',
    );
    await t.manager.stop();
    assert.throws(
      () => createManagerHarness({ container: [] }, { watches: [poolWatch([])] }),
      /watch of unknown reconciler kind: pool/,
    );
  });
});
