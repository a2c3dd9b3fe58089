import assert from 'node:assert/strict';
import { test } from 'node:test';
import { learnReach, localVersion } from './local-writes.ts';
import { hookPostgresClient, type PostgresJsClient } from './postgres-client-hooks.ts';

/** A postgres.js-like client: `unsafe` returns a lazy thenable; a query text containing FAIL rejects. */
function fakeClient() {
  const calls: { query: string; prepare: boolean | undefined }[] = [];
  const unsafe = (query: string, _params?: unknown[], options?: { prepare?: boolean }) => {
    calls.push({ query, prepare: options?.prepare });
    const result = (): Promise<unknown> =>
      query.includes('FAIL') ? Promise.reject(new Error('failed')) : Promise.resolve([]);
    // Lazy, as postgres.js: nothing runs until awaited.
    return { then: ((ok, ko) => result().then(ok, ko)) as PromiseLike<unknown>['then'] };
  };
  const client: PostgresJsClient = {
    unsafe,
    async begin(fn) {
      const tx: PostgresJsClient = { unsafe, begin: () => Promise.reject(new Error('nested begin')) };
      return fn(tx);
    },
  };
  return { client, calls };
}

test('every statement is prepared, whatever drizzle asked', async () => {
  const { client, calls } = fakeClient();
  hookPostgresClient(client);
  await client.unsafe('select 1', [], { prepare: false });
  assert.deepEqual(calls, [{ query: 'select 1', prepare: true }]);
});

test('a write counts once it succeeded; reads and failed writes do not', async () => {
  const { client } = fakeClient();
  const counter = hookPostgresClient(client);
  learnReach(counter, [], []);
  const v0 = localVersion(counter, ['profiles', 'containers']);
  await client.unsafe('select "name" from "profiles"');
  await assert.rejects(Promise.resolve(client.unsafe('update "profiles" set "description" = $1 FAIL')));
  assert.equal(localVersion(counter, ['profiles', 'containers']), v0);
  const pending = client.unsafe('insert into "profiles" ("name") values ($1)');
  assert.equal(localVersion(counter, ['profiles']), '0:0', 'not before it finished');
  await pending;
  assert.equal(localVersion(counter, ['profiles', 'containers']), '0:1,0');
});

test('a transaction counts its writes when it committed, and nothing when it rolled back', async () => {
  const { client } = fakeClient();
  const counter = hookPostgresClient(client);
  learnReach(counter, [], []);
  let inside = '';
  await client.begin(async (tx) => {
    await tx.unsafe('begin');
    await tx.unsafe('delete from "containers" where "id" = $1');
    inside = localVersion(counter, ['containers']);
    await tx.unsafe('commit');
  });
  assert.equal(inside, '0:0', 'not while the transaction is open');
  assert.equal(localVersion(counter, ['containers']), '0:1', 'after the commit; begin and commit are no writes');
  await assert.rejects(
    client.begin(async (tx) => {
      await tx.unsafe('update "containers" set "name" = $1');
      throw new Error('roll back');
    }),
  );
  assert.equal(localVersion(counter, ['containers']), '0:1');
});
