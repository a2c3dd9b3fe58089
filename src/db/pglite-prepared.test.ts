import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { installPreparedStatements, type PreparedClient, type PreparedStats } from './pglite-prepared.ts';

// One instance with prepared statements, one plain one: the same statements must give the same results.
let pg: PGlite;
let plain: PGlite;
let stats: PreparedStats;
const SETUP = `create table t (id text primary key, n integer, j jsonb, at timestamptz, tags text[]);`;
before(async () => {
  pg = new PGlite();
  plain = new PGlite();
  await pg.exec(SETUP);
  await plain.exec(SETUP);
  stats = installPreparedStatements(pg as unknown as PreparedClient, { max: 8 });
});
after(async () => {
  await pg.close();
  await plain.close();
});

/** The names of the statements the backend holds prepared for this session. */
const preparedNames = async () =>
  (await pg.query<{ name: string }>('select name from pg_prepared_statements order by name')).rows.map((r) => r.name);

test('rows, counts and parsed types are the same as PGlite gives; a text is prepared once and then reused', async () => {
  const ins = 'insert into t (id, n, j, at, tags) values ($1, $2, $3, $4, $5) returning *';
  const at = new Date('2030-01-02T03:04:05.678Z');
  for (const db of [pg, plain]) {
    await db.query(ins, ['a', 1, { k: [1, 'x'] }, at, ['p', 'q']]);
    await db.query(ins, ['b', null, null, null, null]);
  }
  const prepared0 = stats.prepared;
  for (const [q, params, options] of [
    ['select * from t order by id', [], undefined],
    ['select * from t where id = $1', ['a'], { rowMode: 'array' as const }],
    ['select id, n from t where n > $1', [0], undefined],
    ['update t set n = n + 1 where id = $1 returning n', ['a'], undefined],
    ['delete from t where id = $1', ['nope'], undefined],
  ] as const) {
    const want = await plain.query(q, [...params], options);
    const got = await pg.query(q, [...params], options);
    assert.deepEqual(got.rows, want.rows, q);
    assert.equal(got.affectedRows, want.affectedRows, q);
    assert.deepEqual(got.fields, want.fields, q);
  }
  assert.deepEqual((await pg.query('select j, at, tags from t where id = $1', ['a'])).rows, [
    { j: { k: [1, 'x'] }, at, tags: ['p', 'q'] },
  ]);
  // Run again: nothing new is prepared.
  const reused0 = stats.reused;
  const preparedBefore = stats.prepared;
  await pg.query('select * from t where id = $1', ['b']);
  assert.equal(stats.prepared, preparedBefore);
  assert.equal(stats.reused, reused0 + 1);
  assert.ok(stats.prepared > prepared0);
  assert.ok((await preparedNames()).every((n) => n.startsWith('svcd_')));
});

test('DDL is not kept prepared', async () => {
  const before = stats.prepared;
  await pg.query('create table u (id integer)');
  await pg.query('drop table u');
  assert.equal(stats.prepared, before);
});

test('errors are PGlite errors carrying the query; the session and a transaction behave as before', async () => {
  await pg.query('insert into t (id) values ($1) on conflict do nothing', ['dup']);
  const e = await pg.query('insert into t (id) values ($1)', ['dup']).catch((x: unknown) => x);
  assert.equal((e as { code?: string }).code, '23505');
  assert.equal((e as { query?: string }).query, 'insert into t (id) values ($1)');
  assert.deepEqual((e as { params?: unknown[] }).params, ['dup']);
  // a bad value fails at Bind, a bad text at Parse: both clear, and the next query works
  assert.equal(
    ((await pg.query('select * from t where n = $1', ['x']).catch((x: unknown) => x)) as { code?: string }).code,
    '22P02',
  );
  assert.equal(((await pg.query('select nope from t').catch((x: unknown) => x)) as { code?: string }).code, '42703');
  assert.equal((await pg.query('select count(*)::int as c from t where id = $1', ['dup'])).rows.length, 1);

  // A failing statement inside a transaction rolls it back whole (the insert before it too).
  const err = await pg
    .transaction(async (tx) => {
      await tx.query('insert into t (id) values ($1)', ['in-tx']);
      await tx.query('insert into t (id) values ($1)', ['dup']);
    })
    .catch((x: unknown) => x);
  assert.equal((err as { code?: string }).code, '23505');
  assert.equal((await pg.query('select id from t where id = $1', ['in-tx'])).rows.length, 0);
  // Prepared inside a rolled-back transaction: still prepared (protocol statements are not transactional).
  await pg.transaction(async (tx) => {
    await tx.query('select id from t where id = $1 and n is null', ['b']);
    await tx.rollback();
  });
  assert.equal((await pg.query('select id from t where id = $1 and n is null', ['b'])).rows.length, 1);
  // A committed transaction's writes are there.
  await pg.transaction(async (tx) => tx.query('insert into t (id, n) values ($1, $2)', ['tx-ok', 5]));
  assert.deepEqual((await pg.query('select n from t where id = $1', ['tx-ok'])).rows, [{ n: 5 }]);
});

test('a statement whose result type changed with the schema is prepared again', async () => {
  const q = 'select * from t where id = $1';
  const cols = Object.keys((await pg.query<Record<string, unknown>>(q, ['a'])).rows[0]!);
  const prepared = stats.prepared;
  await pg.exec('alter table t add column extra text default $$e$$');
  const row = (await pg.query<Record<string, unknown>>(q, ['a'])).rows[0]!;
  assert.deepEqual(Object.keys(row), [...cols, 'extra']);
  assert.equal(row.extra, 'e');
  assert.equal(stats.prepared, prepared + 1, 'prepared again');
});

test('at most `max` statements stay prepared: the least recently used is closed', async () => {
  for (let i = 0; i < 20; i++) await pg.query(`select $1::int + ${i} as v`, [1]);
  assert.deepEqual((await pg.query<{ v: number }>('select $1::int + 19 as v', [1])).rows, [{ v: 20 }]);
  const names = await preparedNames();
  // the one evicted by the query that listed them is closed on the next trip
  assert.ok(names.length <= 9, `${names.length} statements prepared: ${names.join(' ')}`);
  assert.ok(stats.open <= 8);
  // an evicted text still runs (prepared again)
  assert.deepEqual((await pg.query<{ v: number }>('select $1::int + 0 as v', [1])).rows, [{ v: 1 }]);
});
