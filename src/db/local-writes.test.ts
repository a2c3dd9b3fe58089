import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countLocalWrites, localWrites } from './local-writes.ts';

/** A stand-in for PGlite's query/exec/transaction that resolves when told to. */
function fakeClient() {
  const pending: Array<() => void> = [];
  const later = () => new Promise<void>((resolve) => pending.push(resolve));
  return {
    query: (_sql: string) => later(),
    exec: (_sql: string) => later(),
    transaction: <T>(fn: (tx: never) => Promise<T>) => fn({ query: (_sql: string) => Promise.resolve(), exec: (_sql: string) => Promise.resolve() } as never),
    settleAll: async () => {
      for (const r of pending.splice(0)) r();
      await new Promise((r) => setImmediate(r));
    },
  };
}

test('writes are counted once they finished; reads never; transactions when they end, committed or not', async () => {
  const db = {};
  const client = fakeClient();
  assert.equal(localWrites(db), undefined, 'not registered: always ask the database');
  const counter = countLocalWrites(db, client);
  assert.equal(localWrites(db), counter);

  void client.query('select * from containers');
  void client.query('  SHOW shared_buffers');
  await client.settleAll();
  assert.equal(counter.count, 0, 'reads');

  const write = client.query('update containers set power = $1');
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 0, 'not before the write finished');
  await client.settleAll();
  await write;
  assert.equal(counter.count, 1);

  void client.exec('with x as (delete from profiles returning *) select * from x');
  await client.settleAll();
  assert.equal(counter.count, 2, 'a WITH may write');

  type Tx = { query(sql: string): Promise<void>; exec(sql: string): Promise<void> };
  await client.transaction(async (tx: Tx) => void (await tx.query('insert into "profiles" ("name") values ($1)')));
  assert.equal(counter.count, 3);
  await assert.rejects(client.transaction(async (tx: Tx) => { await tx.query('update "containers" set "power" = $1'); throw new Error('rolled back'); }));
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 4, 'a rolled-back transaction counts too (harmless)');
  await client.transaction(async (tx: Tx) => void (await tx.query('select 1')));
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 4, 'a transaction that only read');
  await client.transaction(async (tx: Tx) => void (await tx.exec('select 1')));
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 5, 'exec in a transaction counts as a write');
});

test('writes of isolated tables (operations, reconcile statuses) are not counted, alone or in a transaction', async () => {
  const client = fakeClient();
  const counter = countLocalWrites({}, client);
  void client.query('insert into "operations" ("id", "class") values ($1, $2)');
  void client.query('update "operations" set "status_code" = $1 where ("operations"."id" = $2)');
  void client.query('delete from "reconcile_status" where "kind" = $1');
  void client.query('insert into "reconcile_status" ("kind", "key") values ($1, $2) on conflict ("kind","key") do update set "facts" = $3');
  await client.settleAll();
  assert.equal(counter.count, 0);

  type Tx = { query(sql: string): Promise<void> };
  await client.transaction(async (tx: Tx) => { await tx.query('select 1'); await tx.query('insert into "operations" ("id") values ($1)'); });
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 0, 'a transaction of isolated writes');
  await client.transaction(async (tx: Tx) => { await tx.query('insert into "operations" ("id") values ($1)'); await tx.query('update "containers" set "power" = $1'); });
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 1, 'a transaction that also wrote a versioned table');

  for (const sql of [
    'update "operations" set "x" = 1; delete from "containers"', // two statements
    'update operations set "x" = 1', // not the quoted form drizzle sends
    'with d as (delete from "containers" returning *) update "operations" set "x" = 1',
    'insert into "operations_archive" ("id") values ($1)',
  ]) {
    const before: number = counter.count;
    void client.query(sql);
    await client.settleAll();
    assert.equal(counter.count, before + 1, sql);
  }
  void client.exec('select 1; delete from "containers"');
  await client.settleAll();
  assert.equal(counter.count, 6, 'exec of several statements starting with a read');
});
