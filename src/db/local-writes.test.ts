import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachDatabaseState, createDatabaseState, localWrites } from './database-state.ts';
import { countLocalWrites, learnReach, localVersion } from './local-writes.ts';

/** A stand-in for PGlite's query/exec/transaction that resolves when told to. */
function fakeClient() {
  const pending: Array<() => void> = [];
  const later = () => new Promise<void>((resolve) => pending.push(resolve));
  return {
    query: (_sql: string) => later(),
    exec: (_sql: string) => later(),
    transaction: <T>(fn: (tx: never) => Promise<T>) =>
      fn({ query: (_sql: string) => Promise.resolve(), exec: (_sql: string) => Promise.resolve() } as never),
    settleAll: async () => {
      for (const r of pending.splice(0)) r();
      await new Promise((r) => setImmediate(r));
    },
  };
}
type Tx = { query(sql: string): Promise<void>; exec(sql: string): Promise<void> };
const tick = () => new Promise((r) => setImmediate(r));

/** The schema of the tests: profiles cascade from projects; `audit` has a trigger that may write anything. */
function schema(counter: Parameters<typeof learnReach>[0]) {
  learnReach(
    counter,
    [
      { child: 'profiles', parent: 'projects', onUpdate: 'c', onDelete: 'c' },
      { child: 'containers', parent: 'projects', onUpdate: 'c', onDelete: 'a' },
      { child: 'snapshots', parent: 'containers', onUpdate: 'a', onDelete: 'c' },
      { child: 'volumes', parent: 'pools', onUpdate: 'a', onDelete: 'r' },
    ],
    [
      { table: 'profiles', fn: 'bump_data_version' },
      { table: 'audit', fn: 'write_elsewhere' },
    ],
  );
}

test('writes count per table once finished; reads never; a transaction when it ends, committed or not', async () => {
  const db = {};
  const client = fakeClient();
  assert.equal(localWrites(db), undefined, 'not registered: always ask the database');
  const counter = countLocalWrites(client);
  attachDatabaseState(db, createDatabaseState(counter));
  assert.equal(localWrites(db), counter);
  schema(counter);
  const v = (...tables: string[]) => localVersion(counter, tables);

  const v0 = v('profiles', 'pools');
  void client.query('select * from containers');
  void client.query('  SHOW shared_buffers');
  await client.settleAll();
  assert.equal(v('profiles', 'pools'), v0, 'reads');

  const prof0 = v('profiles');
  const pools0 = v('pools');
  const write = client.query('update "profiles" set "description" = $1');
  await tick();
  assert.equal(v('profiles'), prof0, 'not before the write finished');
  await client.settleAll();
  await write;
  assert.notEqual(v('profiles'), prof0, 'a profiles write');
  assert.equal(v('pools'), pools0, 'pools untouched');

  const p1 = v('profiles');
  await client.transaction(async (tx: Tx) => void (await tx.query('insert into "profiles" ("name") values ($1)')));
  assert.notEqual(v('profiles'), p1, 'a transaction that wrote profiles');
  const p2 = v('profiles');
  await assert.rejects(
    client.transaction(async (tx: Tx) => {
      await tx.query('update "profiles" set "x" = $1');
      throw new Error('rolled back');
    }),
  );
  await tick();
  assert.notEqual(v('profiles'), p2, 'a rolled-back transaction counts too (harmless)');
  const p3 = v('profiles', 'pools');
  await client.transaction(async (tx: Tx) => void (await tx.query('select 1')));
  await tick();
  assert.equal(v('profiles', 'pools'), p3, 'a transaction that only read');
});

test('a write reaches the tables its cascading foreign keys reach; a table with another trigger, and unknown statements, reach everything', async () => {
  const client = fakeClient();
  const counter = countLocalWrites(client);
  const v = (...tables: string[]) => localVersion(counter, tables);
  // Before the schema is known, every write counts for every table.
  void client.query('insert into "operations" ("id") values ($1)');
  await client.settleAll();
  const early = v('pools');
  assert.notEqual(
    early,
    localVersion({ tables: new Map(), any: 0, reach: undefined }, ['pools']),
    'before learnReach: anything',
  );
  schema(counter);

  const write = async (sql: string) => {
    void client.query(sql);
    await client.settleAll();
  };
  const tables = ['projects', 'profiles', 'containers', 'snapshots', 'pools', 'volumes'];
  /** The tables whose version moved over `statements`. */
  const reached = async (...statements: string[]) => {
    const before = tables.map((t) => v(t));
    for (const sql of statements) await write(sql);
    return tables.filter((t, i) => v(t) !== before[i]);
  };
  assert.deepEqual(
    await reached('insert into "projects" ("name") values ($1)', 'insert into "pools" ("name") values ($1)'),
    ['projects', 'pools'],
    'an insert reaches its table only',
  );
  assert.deepEqual(
    await reached('update "projects" set "name" = $1'),
    ['projects', 'profiles', 'containers', 'snapshots'],
    'projects cascade to profiles, containers and on to snapshots',
  );
  assert.deepEqual(
    await reached('delete from "projects" where "name" = $1'),
    ['projects', 'profiles'],
    'on delete: profiles cascade, containers (no action) do not',
  );
  assert.deepEqual(
    await reached('insert into "projects" ("name") values ($1) on conflict ("name") do update set "x" = $2'),
    ['projects', 'profiles', 'containers', 'snapshots'],
    'an upsert counts as an update',
  );
  assert.deepEqual(await reached('delete from "pools" where "name" = $1'), ['pools'], 'restrict: volumes untouched');
  assert.deepEqual(
    await reached('insert into "operations" ("id") values ($1)'),
    [],
    'a table nothing references reaches itself only',
  );

  for (const sql of [
    'update "audit" set "x" = 1', // a trigger that may write anywhere
    'update "operations" set "x" = 1; delete from "pools"', // two statements
    'update operations set "x" = 1', // not the quoted form drizzle sends
    'with d as (delete from "pools" returning *) update "operations" set "x" = 1',
    'truncate "pools"',
  ]) {
    const before = counter.any;
    await write(sql);
    assert.equal(counter.any, before + 1, sql);
  }
  const before = counter.any;
  void client.exec('select 1; delete from "pools"');
  await client.settleAll();
  assert.equal(counter.any, before + 1, 'exec of several statements starting with a read');
  await client.transaction(async (tx: Tx) => void (await tx.exec('select 1')));
  await tick();
  assert.equal(counter.any, before + 2, 'exec in a transaction');
});
