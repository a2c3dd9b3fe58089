import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createVersionListener } from './data-version-listener.ts';
import { localVersion } from './local-writes.ts';

/** A listening connection whose answers the test decides. */
function fakeConnection() {
  const state = { fail: false, sent: [] as string[] };
  return {
    state,
    origin: 'svcd me',
    query: async (text: string) => {
      state.sent.push(text);
      if (state.fail) throw new Error('connection lost');
      return [];
    },
  };
}

test("other processes' notifications bump their table only; this process's own are skipped", async () => {
  const conn = fakeConnection();
  const l = createVersionListener({ ...conn, now: () => 0, heartbeatMs: 60_000 });
  await l.start();
  l.stop();
  assert.equal(conn.state.sent[0], 'listen svcd_data_versions');
  assert.ok(l.live());
  const v = (t: string) => localVersion(l.counter, [t]);
  const [p0, c0] = [v('profiles'), v('containers')];
  l.onNotify('svcd_data_versions', 'profiles svcd other');
  l.onNotify('other_channel', 'containers svcd other');
  l.onNotify('svcd_data_versions', 'containers svcd me');
  assert.notEqual(v('profiles'), p0);
  assert.equal(v('containers'), c0);
  // A beat on a live connection only checks it.
  await l.start();
  l.stop();
  assert.equal(conn.state.sent.at(-1), 'select 1');
  assert.equal(v('containers'), c0);
});

test('a closed or silent connection is not trusted; listening again bumps every table', async () => {
  const conn = fakeConnection();
  let now = 0;
  const l = createVersionListener({ ...conn, now: () => now, heartbeatMs: 1_000, graceMs: 3_000 });
  await l.start();
  l.stop();
  const any0 = l.counter.any;
  now = 3_500;
  assert.equal(l.live(), false, 'no good beat for longer than the grace');
  now = 0;
  l.onClose();
  assert.equal(l.live(), false, 'closed: LISTEN is gone');
  // The next beats (driven here by start()) listen again.
  conn.state.fail = true;
  await l.start();
  l.stop();
  assert.equal(l.live(), false, 'a failed beat leaves it untrusted');
  conn.state.fail = false;
  conn.state.sent.length = 0;
  await l.start();
  l.stop();
  assert.equal(conn.state.sent[0], 'listen svcd_data_versions');
  assert.ok(l.live());
  assert.ok(l.counter.any > any0, 'every table bumped: what was committed meanwhile is unknown');
});
