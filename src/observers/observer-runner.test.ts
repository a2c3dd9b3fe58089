import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeferred, type Deferred } from '../reconcilers/runtime/deferred.ts';

import { pollProbe, setup } from './observer-runner-probes.ts';

describe('observer runner: poll', () => {
  it('samples at start and then every intervalMs', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample });
    await t.clock.advance(5000);
    assert.deepEqual(p.starts, [], 'nothing before start()');
    t.runner.start();
    await t.clock.advance(3500);
    assert.deepEqual(p.starts, [5000, 6000, 7000, 8000]);
    await t.runner.stop();
    await t.clock.advance(5000);
    assert.equal(p.starts.length, 4);
    assert.equal(t.clock.pendingTimers(), 0);
  });

  it('never overlaps samples: ticks during a running sample are skipped', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    p.hold = true;
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample });
    t.runner.start();
    await t.clock.advance(2500);
    assert.deepEqual(p.starts, [0], 'ticks at 1000 and 2000 skipped');
    p.hold = false;
    p.releaseAll();
    await t.clock.advance(500);
    assert.deepEqual(p.starts, [0, 3000]);
    assert.equal(p.maxActive, 1);
    assert.ok(t.log.at('debug', 'tick skipped').length >= 2);
    await t.runner.stop();
  });

  it('keeps ticking when samples fail, logging each failure', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    p.fail = true;
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample });
    t.runner.start();
    await t.clock.advance(3000);
    assert.deepEqual(p.starts, [0, 1000, 2000, 3000]);
    const warnings = t.log.at('warn', 'sample failed');
    assert.equal(warnings.length, 4);
    assert.equal(warnings[0]?.obj.observer, 'ls');
    await t.runner.stop();
  });

  it('tolerates a sample that throws synchronously', async () => {
    const t = setup();
    let calls = 0;
    t.runner.register({
      name: 'sync',
      kind: 'poll',
      intervalMs: 100,
      sample: () => {
        calls++;
        throw new Error('sync throw');
      },
    });
    t.runner.start();
    await t.clock.advance(200);
    assert.equal(calls, 3);
    await t.runner.stop();
  });

  it('stop() aborts a running sample and waits for it', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    p.hold = true;
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample });
    t.runner.start();
    await t.clock.advance(0);
    let stopped = false;
    const stopping = t.runner.stop().then(() => (stopped = true));
    assert.equal(p.signals[0]?.aborted, true);
    await t.clock.advance(0);
    assert.equal(stopped, false);
    p.releaseAll();
    await stopping;
  });

  it('runNow samples immediately, or once more right after a running sample', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 10_000, sample: p.sample });
    t.runner.start();
    await t.clock.advance(100);
    await t.runner.runNow('ls');
    assert.deepEqual(p.starts, [0, 100]);

    p.hold = true;
    await t.clock.advance(9_900); // tick at 10_000 starts a held sample
    assert.equal(p.starts.length, 3);
    let done = 0;
    const a = t.runner.runNow('ls').then(() => done++);
    const b = t.runner.runNow('ls').then(() => done++);
    await t.clock.advance(0);
    assert.equal(p.starts.length, 3, 'waits for the running sample');
    p.hold = false;
    p.releaseAll();
    await Promise.all([a, b]);
    assert.equal(done, 2);
    assert.equal(p.starts.length, 4, 'two callers share one extra sample');
    assert.equal(p.maxActive, 1);
    await t.runner.stop();
  });

  it('runNow rejects for unknown names and before start; register rejects duplicates', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample });
    await assert.rejects(t.runner.runNow('ls'), /not started/);
    t.runner.start();
    await assert.rejects(t.runner.runNow('nope'), /unknown observer: nope/);
    assert.throws(
      () => t.runner.register({ name: 'ls', kind: 'poll', intervalMs: 1000, sample: p.sample }),
      /already registered/,
    );
    assert.throws(() => t.runner.register({ name: 'zero', kind: 'poll', intervalMs: 0, sample: p.sample }), RangeError);
    await t.runner.stop();
  });

  it('starts an observer registered after start()', async () => {
    const t = setup();
    const p = pollProbe(t.clock.now);
    t.runner.start();
    await t.clock.advance(50);
    t.runner.register({ name: 'late', kind: 'poll', intervalMs: 1000, sample: p.sample });
    await t.clock.advance(1000);
    assert.deepEqual(p.starts, [50, 1050]);
    await t.runner.stop();
  });
});

describe('observer runner: stream', () => {
  /** A stream watcher whose runs are recorded and ended by the test. */
  function streamProbe(now: () => number) {
    const runs: Array<{ at: number; signal: AbortSignal; end: Deferred<void> }> = [];
    return {
      runs,
      starts: () => runs.map((r) => r.at),
      run: (signal: AbortSignal): Promise<void> => {
        const end = createDeferred<void>();
        signal.addEventListener('abort', () => end.reject(signal.reason));
        runs.push({ at: now(), signal, end });
        return end.promise;
      },
    };
  }

  it('restarts an ending watcher with capped exponential backoff', async () => {
    const t = setup();
    const starts: number[] = [];
    t.runner.register({
      name: 'monitor',
      kind: 'stream',
      run: async () => {
        starts.push(t.clock.now());
        if (starts.length % 2 === 0) throw new Error('monitor crashed');
      },
    });
    t.runner.start();
    await t.clock.advance(200_000);
    const delays = starts.slice(1).map((at, i) => at - (starts[i] ?? 0));
    assert.deepEqual(delays.slice(0, 8), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    assert.ok(t.log.at('warn', 'failed; restarting').length > 0);
    assert.ok(t.log.at('warn', 'ended; restarting').length > 0);
    await t.runner.stop();
  });

  it('resets the backoff after a run of at least 60 s', async () => {
    const t = setup();
    const s = streamProbe(t.clock.now);
    t.runner.register({ name: 'monitor', kind: 'stream', run: s.run });
    t.runner.start();
    await t.clock.advance(0);
    s.runs[0]?.end.resolve(); // t=0 → restart at 1000
    await t.clock.advance(1000);
    s.runs[1]?.end.reject(new Error('x')); // t=1000 → restart at 3000
    await t.clock.advance(2000);
    assert.deepEqual(s.starts(), [0, 1000, 3000]);
    await t.clock.advance(59_999);
    s.runs[2]?.end.resolve(); // ran 59.999 s → 4 s backoff
    await t.clock.advance(4000);
    assert.deepEqual(s.starts(), [0, 1000, 3000, 66_999]);
    await t.clock.advance(60_000);
    s.runs[3]?.end.resolve(); // ran 60 s → back to 1 s
    await t.clock.advance(999);
    assert.equal(s.runs.length, 4);
    await t.clock.advance(1);
    assert.deepEqual(s.starts(), [0, 1000, 3000, 66_999, 127_999]);
    await t.runner.stop();
  });

  it('stop() aborts the watcher and does not restart it', async () => {
    const t = setup();
    const s = streamProbe(t.clock.now);
    t.runner.register({ name: 'monitor', kind: 'stream', run: s.run });
    t.runner.start();
    await t.clock.advance(0);
    await t.runner.stop();
    assert.equal(s.runs[0]?.signal.aborted, true);
    await t.clock.advance(120_000);
    assert.equal(s.runs.length, 1);
    assert.equal(t.clock.pendingTimers(), 0);
  });

  it('stop() during a restart backoff cancels the restart', async () => {
    const t = setup();
    const s = streamProbe(t.clock.now);
    t.runner.register({ name: 'monitor', kind: 'stream', run: s.run });
    t.runner.start();
    await t.clock.advance(0);
    s.runs[0]?.end.resolve();
    await t.clock.advance(500);
    await t.runner.stop();
    await t.clock.advance(10_000);
    assert.equal(s.runs.length, 1);
  });

  it('runNow restarts a watcher waiting out its backoff, and is a no-op while it runs', async () => {
    const t = setup();
    const s = streamProbe(t.clock.now);
    t.runner.register({ name: 'monitor', kind: 'stream', run: s.run });
    t.runner.start();
    await t.clock.advance(0);
    await t.runner.runNow('monitor');
    assert.equal(s.runs.length, 1);
    s.runs[0]?.end.resolve();
    await t.clock.advance(10);
    await t.runner.runNow('monitor');
    assert.deepEqual(s.starts(), [0, 10]);
    await t.clock.advance(10);
    s.runs[1]?.end.resolve(); // t=20, second quick end → 2 s backoff
    await t.clock.advance(1999);
    assert.equal(s.runs.length, 2, 'the cancelled 1 s backoff timer must not restart it early');
    await t.clock.advance(1);
    assert.deepEqual(s.starts(), [0, 10, 2020]);
    await t.runner.stop();
  });
});
