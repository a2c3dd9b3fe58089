import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeferred } from './deferred.ts';
import { createManagerHarness } from './manager-harness.ts';
import { createResyncPass } from './resync-pass.ts';

describe('resync pass', () => {
  it('ends when the listing is over and every listed key has run, with its duration', async () => {
    let t = 100;
    const pass = createResyncPass({ clock: { now: () => t } });
    const done = pass.begin('resync');
    pass.add('a');
    pass.add('b');
    pass.add('a');
    pass.ran('a');
    t = 130;
    pass.ran('b');
    assert.ok(pass.running(), 'not over while the listing goes on');
    t = 150;
    pass.listed();
    assert.deepEqual(await done, { reason: 'resync', keys: 2, tookMs: 50 });
    assert.equal(pass.running(), false);
    assert.throws(() => (pass.begin('x'), pass.begin('y')), /already under way/);
  });

  it('the manager resolves resync() once each key of every kind was reconciled, and refuses a second one meanwhile', async () => {
    const h = createManagerHarness({ box: ['k1', 'k2'], bag: ['b1'] });
    await h.manager.start();
    await h.manager.idle();
    const slow = createDeferred<void>();
    h.r('box').impl = async (key) => {
      if (key === 'k2') await slow.promise;
      return {};
    };
    await h.clock.advance(5);
    const pass = h.manager.resync('bench');
    await assert.rejects(h.manager.resync('again'), /already under way/);
    let over = false;
    void pass.then(() => (over = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(over, false, 'k2 is still running');
    await h.clock.advance(20);
    slow.resolve();
    const r = await pass;
    assert.deepEqual({ reason: r.reason, keys: r.keys, tookMs: r.tookMs }, { reason: 'bench', keys: 3, tookMs: 20 });
    assert.deepEqual(
      h.r('bag').calls.map((c) => c.reason),
      ['startup', 'bench'],
    );
    await h.manager.stop();
  });
});
