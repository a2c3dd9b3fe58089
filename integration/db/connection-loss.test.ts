/**
 * A PostgreSQL backend that dies under svcd (the server restarted, crashed, or an operator's
 * pg_terminate_backend). postgres.js 3.4.9 has three defects on that path, patched at install
 * (patches/postgres+3.4.9.patch, applied by patch-package):
 *  - a query on a reserved connection whose socket closed threw from a setImmediate: an uncaught
 *    exception that took the daemon down (porsager/postgres#1208);
 *  - such a connection, released, went back to the pool as open with no socket: every later query of a
 *    one-connection client failed with CONNECTION_CLOSED, for ever;
 *  - a write buffered when the socket died stayed buffered with its timer disarmed: the reconnected
 *    connection never flushed again (its queries hung).
 * svcd reserves a connection for every transaction (pipelined-begin.ts) and its clients have one
 * connection each (tiered-client.ts), so each of these stopped it for good.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/open-database.ts';
import type { Database, Db } from '../../src/db/types.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

const skip = adminUrl ? false : 'SVCD_TEST_PG_URL is not set';
const pidOf = async (db: Db | postgres.Sql) =>
  'unsafe' in db
    ? ((await db.unsafe('select pg_backend_pid() as pid')) as unknown as { pid: number }[])[0]!.pid
    : ((await db.execute(sql`select pg_backend_pid() as pid`)) as unknown as { pid: number }[])[0]!.pid;

describe('a backend that dies under svcd', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let admin: postgres.Sql;
  let uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => void uncaught.push(e);
  before(async () => {
    database = await createTestDatabase();
    admin = postgres(database.url, { max: 1, onnotice: () => {} });
    process.on('uncaughtException', onUncaught);
  });
  after(async () => {
    process.off('uncaughtException', onUncaught);
    await admin?.end();
    await database?.drop();
  });
  const terminate = async (pid: number) => void (await admin`select pg_terminate_backend(${pid})`);

  test('postgres.js: a query on a reserved connection whose backend died fails, and released, the pool reconnects', async () => {
    uncaught = [];
    const client = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const conn = await client.reserve();
      await conn.unsafe('begin');
      await terminate(await pidOf(conn as unknown as postgres.Sql));
      await new Promise((r) => setTimeout(r, 200));
      await assert.rejects(conn.unsafe('select 1'), (e: { code?: string }) => e.code === 'CONNECTION_CLOSED');
      await assert.rejects(conn.unsafe('rollback'), (e: { code?: string }) => e.code === 'CONNECTION_CLOSED');
      conn.release();
      assert.deepEqual([...(await client.unsafe('select 2 as v'))], [{ v: 2 }], 'a new connection');
      assert.deepEqual([...(await client.unsafe('select 3 as v'))], [{ v: 3 }]);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(uncaught, [], 'nothing thrown outside the queries');
    } finally {
      await client.end({ timeout: 2 });
    }
  });

  describe('svcd\'s database handle', () => {
    let d: Database;
    before(async () => {
      d = await openDatabase({ stateDir: '/nonexistent', databaseUrl: database.url });
    });
    after(async () => {
      await d?.close();
    });

    for (const which of ['db', 'relaxed'] as const) {
      test(`${which}: a transaction whose backend dies fails; the next ones succeed`, async () => {
        uncaught = [];
        const h = d[which];
        for (let round = 0; round < 3; round++) {
          await assert.rejects(
            h.transaction(async (tx) => {
              await terminate(await pidOf(tx as unknown as Db));
              await new Promise((r) => setTimeout(r, 100));
              await tx.execute(sql`select 1`);
            }),
          );
          const [row] = (await h.transaction(async (tx) => tx.execute(sql`select ${round}::int as v`))) as unknown as { v: number }[];
          assert.equal(row?.v, round, 'a transaction after it');
          const [plain] = (await h.execute(sql`select 7 as v`)) as unknown as { v: number }[];
          assert.equal(plain?.v, 7, 'and a plain query');
        }
        await new Promise((r) => setImmediate(r));
        assert.deepEqual(uncaught, [], 'nothing thrown outside the queries');
      });
    }

    test('a plain query whose backend died fails; the connection is made again for the next', async () => {
      const pid = await pidOf(d.db);
      await terminate(pid);
      await new Promise((r) => setTimeout(r, 100));
      await d.db.execute(sql`select 1`).catch(() => {});
      const [row] = (await d.db.execute(sql`select 5 as v`)) as unknown as { v: number }[];
      assert.equal(row?.v, 5);
      assert.notEqual(await pidOf(d.db), pid, 'another backend');
    });
  });
});
