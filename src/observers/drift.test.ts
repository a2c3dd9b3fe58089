import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDriftReporter } from './drift.ts';

describe('drift reporter', () => {
  it('enqueues with a drift reason and coalesces identical reports in the same tick', async () => {
    const calls: Array<[string, string, string]> = [];
    const drift = createDriftReporter({ enqueue: (kind, key, reason) => calls.push([kind, key, reason]) });
    drift.report('container', 'web', 'state STOPPED');
    drift.report('container', 'web', 'state STOPPED');
    drift.report('container', 'web', 'state STOPPED');
    drift.report('container', 'web', 'memory limit');
    drift.report('container', 'db', 'state STOPPED');
    drift.report('network', 'web', 'state STOPPED');
    assert.deepEqual(calls, [
      ['container', 'web', 'drift: state STOPPED'],
      ['container', 'web', 'drift: memory limit'],
      ['container', 'db', 'drift: state STOPPED'],
      ['network', 'web', 'drift: state STOPPED'],
    ]);
    await Promise.resolve();
    drift.report('container', 'web', 'state STOPPED');
    assert.equal(calls.length, 5, 'a later tick reports again');
  });

  it('lets enqueue errors reach the caller and does not swallow a retry', () => {
    let fail = true;
    let calls = 0;
    const drift = createDriftReporter({
      enqueue: () => {
        calls++;
        if (fail) throw new Error('unknown reconciler kind: x');
      },
    });
    assert.throws(() => drift.report('x', 'k', 'gone'), /unknown reconciler kind/);
    fail = false;
    drift.report('x', 'k', 'gone');
    assert.equal(calls, 2);
  });

  it('reportAfter hands the delay to enqueueAfter; no delay (or no enqueueAfter) reports at once', () => {
    const now: string[] = [];
    const later: Array<[string, string, number, string]> = [];
    const drift = createDriftReporter({
      enqueue: (_k, key, reason) => now.push(`${key} ${reason}`),
      enqueueAfter: (kind, key, ms, reason) => later.push([kind, key, ms, reason]),
    });
    drift.reportAfter('container', 'c1', 1_000, 'crash loop');
    drift.reportAfter('container', 'c2', 0, 'crash');
    assert.deepEqual(later, [['container', 'c1', 1_000, 'drift: crash loop']]);
    assert.deepEqual(now, ['c2 drift: crash']);
    const plain: string[] = [];
    createDriftReporter({ enqueue: (_k, key) => plain.push(key) }).reportAfter('container', 'c3', 500, 'x');
    assert.deepEqual(plain, ['c3']);
  });
});
