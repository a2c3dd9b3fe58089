import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollProbe, setup } from './observer-runner-probes.ts';

describe('observer runner: observers that wait for the startup reconcile', () => {
  it('an afterStartup observer first looks at startupDone, the others at start; a restart waits again', async () => {
    const t = setup();
    const early = pollProbe(t.clock.now);
    const late = pollProbe(t.clock.now);
    t.runner.register({ name: 'early', kind: 'poll', intervalMs: 1000, sample: early.sample });
    t.runner.register({ name: 'late', kind: 'poll', intervalMs: 1000, sample: late.sample, afterStartup: true });
    t.runner.start();
    await t.clock.advance(2500);
    assert.deepEqual(early.starts, [0, 1000, 2000]);
    assert.deepEqual(late.starts, [], 'nothing before startupDone()');
    await t.runner.runNow('late');
    assert.deepEqual(late.starts, [], 'runNow waits for startupDone() too');
    t.runner.startupDone();
    await t.clock.advance(1000);
    assert.deepEqual(late.starts, [2500, 3500]);
    await t.runner.stop();
    t.runner.start();
    await t.clock.advance(1500);
    assert.deepEqual(late.starts, [2500, 3500], 'a runner started again waits for its startup again');
    late.hold = true;
    let firstLookDone = false;
    const done = t.runner.startupDone().then(() => (firstLookDone = true));
    await t.clock.advance(0);
    assert.deepEqual(late.starts, [2500, 3500, 5000]);
    assert.equal(firstLookDone, false, 'startupDone() waits for the first look');
    late.releaseAll();
    await done;
  });
});
