import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeferred } from './deferred.ts';
import { createManagerHarness, untilAborted } from './manager-harness.ts';
import { HostCommandError } from '../../host/exec.ts';
import { TerminalError } from './terminal-error.ts';

describe('reconcile manager: failures', () => {
  it('a terminal error fails pending operations and is not retried', async () => {
    const t = createManagerHarness({ box: ['k'] });
    t.r('box').impl = async () => {
      throw new TerminalError('unsupported host');
    };
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(t.settler.calls, [['failed', 'box', 'k', 'unsupported host', true]]);
    assert.deepEqual(t.manager.status('box', 'k'), { failures: 0, lastError: 'unsupported host' });
    await t.clock.advance(4 * 60_000);
    assert.equal(t.r('box').calls.length, 1);

    // A new trigger tries again.
    t.manager.enqueue('box', 'k', 'api');
    await t.manager.idle();
    assert.deepEqual(
      t.r('box').calls.map((c) => c.reason),
      ['startup', 'api'],
    );
    await t.manager.stop();
  });

  it("a host command failure its classifier judged terminal ends at once with the tool's words, no retry", async () => {
    const t = createManagerHarness({ box: ['k'] });
    t.r('box').impl = async () => {
      throw new HostCommandError(
        ['tar', '--extract'],
        2,
        'tar: Unexpected EOF in archive',
        'tar --extract exited with 2: tar: Unexpected EOF in archive',
        true,
      );
    };
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(t.settler.calls, [['failed', 'box', 'k', 'tar: Unexpected EOF in archive', true]]);
    await t.clock.advance(4 * 60_000);
    assert.equal(t.r('box').calls.length, 1, 'not retried (until the next resync or trigger)');
    await t.manager.stop();
  });

  it('a host command failure judged transient is retried with backoff', async () => {
    const t = createManagerHarness({ box: ['k'] });
    t.r('box').impl = async () => {
      throw new HostCommandError(
        ['tar', '--extract'],
        2,
        'tar: x: Cannot write: No space left on device',
        'tar --extract exited with 2: tar: x: Cannot write: No space left on device',
        false,
      );
    };
    await t.manager.start();
    await t.manager.idle();
    await t.clock.advance(600);
    assert.equal(t.r('box').calls.length, 2, 'retried after 500 ms');
    assert.equal(t.settler.calls[0]![4], false);
    await t.manager.stop();
  });

  it('a transient error is recorded and retried at 500, 1000, 2000 ms; success resets the backoff', async () => {
    const t = createManagerHarness({ box: ['k'] });
    let fail = true;
    t.r('box').impl = async () => {
      if (fail) throw new Error('lxc busy');
      return { observedGeneration: 3 };
    };
    await t.manager.start();
    await t.manager.idle();
    const calls = () => t.r('box').calls;
    assert.equal(calls().length, 1);
    assert.deepEqual(t.settler.calls, [['failed', 'box', 'k', 'lxc busy', false]]);
    assert.deepEqual(t.manager.status('box', 'k'), { failures: 1, lastError: 'lxc busy', nextRetryAt: 500 });

    await t.clock.advance(499);
    assert.equal(calls().length, 1);
    await t.clock.advance(1); // t=500
    assert.equal(calls().length, 2);
    await t.clock.advance(999);
    assert.equal(calls().length, 2);
    await t.clock.advance(1); // t=1500
    assert.equal(calls().length, 3);
    await t.clock.advance(1999);
    assert.equal(calls().length, 3);
    await t.clock.advance(1); // t=3500
    assert.equal(calls().length, 4);
    assert.deepEqual(
      calls().map((c) => [c.at, c.attempt, c.reason]),
      [
        [0, 0, 'startup'],
        [500, 1, 'retry'],
        [1500, 2, 'retry'],
        [3500, 3, 'retry'],
      ],
    );
    assert.equal(t.manager.status('box', 'k')?.failures, 4);

    fail = false;
    await t.clock.advance(4000); // t=7500: 5th call succeeds
    assert.equal(calls().length, 5);
    assert.equal(t.manager.status('box', 'k'), undefined);
    assert.deepEqual(t.settler.calls.at(-1), ['converged', 'box', 'k', 3]);

    fail = true;
    t.manager.enqueue('box', 'k', 'api');
    await t.manager.idle();
    assert.equal(calls().at(-1)?.attempt, 0);
    await t.clock.advance(499);
    assert.equal(calls().length, 6);
    await t.clock.advance(1);
    assert.equal(calls().length, 7, 'back to the 500 ms base after a success');
    await t.manager.stop();
  });

  it('caps the retry delay at backoff.maxMs', async () => {
    const t = createManagerHarness({ box: ['k'] }, { backoff: { baseMs: 100, maxMs: 300 } });
    t.r('box').impl = async () => {
      throw new Error('nope');
    };
    await t.manager.start();
    await t.clock.advance(100 + 200 + 300 + 300 + 300);
    assert.deepEqual(
      t.r('box').calls.map((c) => c.at),
      [0, 100, 300, 600, 900, 1200],
    );
    await t.manager.stop();
  });

  it('a trigger during backoff runs the key now and drops the stale retry', async () => {
    const t = createManagerHarness({ box: ['k'] });
    let fail = true;
    t.r('box').impl = async () => {
      if (fail) throw new Error('flaky');
      return {};
    };
    await t.manager.start();
    await t.manager.idle();
    fail = false;
    await t.clock.advance(100);
    t.manager.enqueue('box', 'k', 'api');
    await t.manager.idle();
    await t.clock.advance(10_000);
    assert.deepEqual(
      t.r('box').calls.map((c) => [c.at, c.reason]),
      [
        [0, 'startup'],
        [100, 'api'],
      ],
    );
    await t.manager.stop();
  });

  it('a successful re-run of a dirty key drops the retry scheduled by the failed run before it', async () => {
    const t = createManagerHarness({ box: [] });
    const gate = createDeferred<void>();
    t.r('box').impl = async (_key, ctx) => {
      if (ctx.reason !== 'first') return {};
      await gate.promise;
      throw new Error('flaky');
    };
    await t.manager.start();
    t.manager.enqueue('box', 'k', 'first');
    await t.clock.advance(0);
    t.manager.enqueue('box', 'k', 'second'); // marks the running key dirty
    gate.resolve(); // first run fails → retry at 500; the dirty re-run succeeds now
    await t.manager.idle();
    await t.clock.advance(10_000);
    assert.deepEqual(
      t.r('box').calls.map((c) => [c.at, c.reason]),
      [
        [0, 'first'],
        [0, 'second'],
      ],
    );
    assert.equal(t.manager.status('box', 'k'), undefined);
    await t.manager.stop();
  });

  it('aborts a reconcile that exceeds the timeout and treats it as transient', async () => {
    const t = createManagerHarness({ box: ['k'] }, { reconcileTimeoutMs: 1000 });
    t.r('box').impl = untilAborted;
    await t.manager.start();
    await t.clock.advance(999);
    const first = t.r('box').calls[0];
    assert.ok(first);
    assert.equal(first.signal.aborted, false);
    assert.equal(t.settler.calls.length, 0);
    await t.clock.advance(1);
    assert.equal(first.signal.aborted, true);
    assert.deepEqual(t.settler.calls, [['failed', 'box', 'k', 'reconcile timed out after 1000ms', false]]);
    assert.equal(t.manager.status('box', 'k')?.failures, 1);
    await t.clock.advance(500);
    assert.equal(t.r('box').calls.length, 2, 'retried with backoff');
    await t.manager.stop();
  });

  it('abandons a timed-out reconcile that ignores its signal after the grace period', async () => {
    const t = createManagerHarness({ box: ['k'] }, { reconcileTimeoutMs: 1000, abortGraceMs: 200 });
    t.r('box').impl = (_key, ctx) => (ctx.reason === 'startup' ? new Promise(() => {}) : Promise.resolve({}));
    await t.manager.start();
    await t.clock.advance(1199);
    assert.equal(t.settler.calls.length, 0);
    await t.clock.advance(1);
    assert.deepEqual(t.settler.calls, [['failed', 'box', 'k', 'reconcile timed out after 1000ms', false]]);
    assert.equal(t.log.at('error', 'abandoned').length, 1);
    await t.clock.advance(500);
    assert.equal(t.r('box').calls.length, 2);
    await t.manager.stop();
  });

  it('survives a settler that throws and retries the key with backoff', async () => {
    const t = createManagerHarness({ box: ['k'] });
    t.r('box').impl = async () => ({ observedGeneration: 1 });
    t.settler.convergedError = new Error('db locked');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(t.manager.status('box', 'k'), {
      failures: 1,
      lastError: 'settler: db locked',
      nextRetryAt: 500,
    });
    assert.equal(t.log.at('error', 'settler failed').length, 1);
    t.settler.convergedError = undefined;
    await t.clock.advance(500);
    assert.equal(t.r('box').calls.length, 2);
    assert.equal(t.manager.status('box', 'k'), undefined);
    await t.manager.stop();
  });

  it("a removal's rows go to the settler, and afterSettle runs only once the settler recorded it", async () => {
    const t = createManagerHarness({ box: ['k'] });
    const after: number[] = [];
    const removeRows = async () => {};
    t.r('box').impl = async () => ({
      observedGeneration: 4,
      gone: true,
      removeRows,
      afterSettle: () => void after.push(t.settler.calls.length),
    });
    t.settler.convergedError = new Error('db locked');
    await t.manager.start();
    await t.manager.idle();
    assert.deepEqual(t.settler.removals, [removeRows], 'handed to the settler');
    assert.deepEqual(after, [], 'not after a failed settle');
    t.settler.convergedError = undefined;
    await t.clock.advance(500);
    assert.deepEqual(after, [2], 'after the second, recorded settle');
    await t.manager.stop();
  });

  it('survives a settler that throws while recording failures', async () => {
    const t = createManagerHarness({ term: ['k'], trans: ['k'] });
    t.r('term').impl = async () => {
      throw new TerminalError('bad config');
    };
    t.r('trans').impl = async () => {
      throw new Error('busy');
    };
    t.settler.failedError = new Error('db gone');
    await t.manager.start();
    await t.manager.idle();
    // Terminal failure could not be recorded: retried so it gets recorded later.
    assert.equal(t.manager.status('term', 'k')?.lastError, 'settler: db gone');
    assert.equal(t.manager.status('trans', 'k')?.failures, 1);
    await t.clock.advance(500);
    assert.equal(t.r('term').calls.length, 2);
    assert.equal(t.r('trans').calls.length, 2);
    await t.manager.stop();
  });
});
