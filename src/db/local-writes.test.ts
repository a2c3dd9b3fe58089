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
    transaction: <T>(fn: (tx: never) => Promise<T>) => fn(undefined as never),
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

  await client.transaction(async () => 1);
  assert.equal(counter.count, 3);
  await assert.rejects(client.transaction(async () => { throw new Error('rolled back'); }));
  await new Promise((r) => setImmediate(r));
  assert.equal(counter.count, 4, 'a rolled-back transaction counts too (harmless)');
});
