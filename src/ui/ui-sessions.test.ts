import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { uiLoginTokens, uiSessions } from '../desired/schema/index.ts';
import { createUiSessions, SESSION_TTL_MS, TOKEN_TTL_MS } from './ui-sessions.ts';

const temp = useTempDatabase('svcd-ui-sessions-');

test('a token logs in once; a used, expired or made-up one logs nobody in; only hashes are stored', async () => {
  let clock = new Date('2026-01-01T00:00:00Z');
  const sessions = createUiSessions({ db: temp.database.db, now: () => clock });
  const { token, expiresAt } = await sessions.issueToken();
  assert.equal(expiresAt.getTime() - clock.getTime(), TOKEN_TTL_MS);
  const first = await sessions.redeemToken(token, { address: '127.0.0.1', userAgent: 'test' });
  assert.ok(first);
  assert.equal(first.maxAgeSec, SESSION_TTL_MS / 1000);
  assert.equal(await sessions.redeemToken(token, {}), undefined, 'reused');
  assert.ok(await sessions.check(first.secret));
  assert.equal(await sessions.check('x'.repeat(43)), undefined);
  assert.equal(await sessions.redeemToken('not a token', {}), undefined);

  const late = await sessions.issueToken();
  clock = new Date(clock.getTime() + TOKEN_TTL_MS + 1);
  assert.equal(await sessions.redeemToken(late.token, {}), undefined, 'expired');

  const stored = JSON.stringify([
    await temp.database.db.select().from(uiSessions),
    await temp.database.db.select().from(uiLoginTokens),
  ]);
  assert.ok(!stored.includes(first.secret) && !stored.includes(late.token), 'no secret stored in clear');

  const list = await sessions.list();
  assert.equal(list.length, 1);
  assert.equal(list[0]!.address, '127.0.0.1');
  assert.equal(list[0]!.user_agent, 'test');

  clock = new Date(clock.getTime() + SESSION_TTL_MS);
  assert.equal(await sessions.check(first.secret), undefined, 'session expired');
});

test('two redeems of one token race: one session', async () => {
  const sessions = createUiSessions({ db: temp.database.db });
  const { token } = await sessions.issueToken();
  const results = await Promise.all([sessions.redeemToken(token, {}), sessions.redeemToken(token, {})]);
  assert.equal(results.filter(Boolean).length, 1);
});

test('revokeAll ends every session and unused token; end ends one', async () => {
  const sessions = createUiSessions({ db: temp.database.db });
  const a = (await sessions.redeemToken((await sessions.issueToken()).token, {}))!;
  const b = (await sessions.redeemToken((await sessions.issueToken()).token, {}))!;
  await sessions.end(a.secret);
  assert.equal(await sessions.check(a.secret), undefined);
  assert.ok(await sessions.check(b.secret));
  const unused = await sessions.issueToken();
  assert.ok((await sessions.revokeAll()) >= 1);
  assert.equal(await sessions.check(b.secret), undefined);
  assert.equal(await sessions.redeemToken(unused.token, {}), undefined);
  assert.deepEqual(await sessions.list(), []);
});
