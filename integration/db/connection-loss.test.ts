/**
 * A PostgreSQL backend that dies under svcd (the server restarted, crashed, or an operator's
 * pg_terminate_backend). postgres.js 3.4.9 has six defects on that path, patched at install
 * (patches/postgres+3.4.9.patch, applied by patch-package; the tests below fail without it):
 *  - a query on a reserved connection whose socket closed threw from a setImmediate: an uncaught
 *    exception that took the daemon down (porsager/postgres#1208);
 *  - such a connection, released, went back to the pool as open with no socket: every later query of a
 *    one-connection client failed with CONNECTION_CLOSED, for ever;
 *  - a write buffered when the socket died stayed buffered with its timer disarmed: the reconnected
 *    connection never flushed again (its queries hung);
 *  - on a reserved connection, a query sent behind one still in flight (a statement new to the connection is
 *    described first, and what follows waits in the reservation's queue) never settled when the connection
 *    closed: the transaction, and whatever awaited it, hung for ever;
 *  - the backend's last error (57P01, terminated) stayed pending with the dead session and failed the first
 *    query of the next one;
 *  - on a reserved connection that had closed already, a query was written to no socket, and one sent behind
 *    it queued for ever (the close had come before them, so nothing was left to reject them).
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

/** How a query ended: 'answered', or its error's code. */
const settled = (p: PromiseLike<unknown>) =>
  Promise.resolve(p).then(
    () => 'answered',
    (e: { code?: string }) => e.code ?? 'failed',
  );
/** Its end, or 'still waiting after 3 s'. */
const within = (p: Promise<string>) =>
  Promise.race([p, new Promise<string>((r) => setTimeout(() => r('still waiting after 3 s'), 3_000))]);

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

  test('postgres.js: queries sent on a reserved connection after it closed fail at once, the described one and the one behind it', async () => {
    let closed!: () => void;
    const seenClosed = new Promise<void>((r) => (closed = r));
    const client = postgres(database.url, { max: 1, onnotice: () => {}, onclose: () => closed() });
    try {
      const conn = await client.reserve();
      await conn.unsafe('begin');
      await terminate(await pidOf(conn as unknown as postgres.Sql));
      // The close is seen first this time: both are sent to a connection already closed.
      await seenClosed;
      const first = settled(conn.unsafe('select $1::int + 1 as v', [1], { prepare: true }));
      const second = settled(conn.unsafe('select $1::int + 2 as v', [1], { prepare: true }));
      assert.equal(await within(first), 'CONNECTION_CLOSED');
      assert.equal(await within(second), 'CONNECTION_CLOSED', 'the query behind it fails too');
      conn.release();
      assert.deepEqual([...(await client.unsafe('select 5 as v'))], [{ v: 5 }], 'a new connection');
    } finally {
      await client.end({ timeout: 2 });
    }
  });

  test('postgres.js: a query waiting behind a described one on a reserved connection fails when the connection closes', async () => {
    const client = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const conn = await client.reserve();
      await conn.unsafe('begin');
      await terminate(await pidOf(conn as unknown as postgres.Sql));
      // Sent at once: the first (new, with a parameter) is described first; the second waits behind it.
      const first = settled(conn.unsafe('select $1::int + 1 as v', [1], { prepare: true }));
      const second = settled(conn.unsafe('select $1::int + 2 as v', [1], { prepare: true }));
      // Failed, by the backend's last word (57P01: terminated by an administrator) or by the closed connection.
      assert.match(await within(first), /57P01|CONNECTION_CLOSED|ECONNRESET/);
      assert.match(await within(second), /57P01|CONNECTION_CLOSED|ECONNRESET/, 'the query behind it fails too');
      conn.release();
      assert.deepEqual([...(await client.unsafe('select 4 as v'))], [{ v: 4 }]);
    } finally {
      await client.end({ timeout: 2 });
    }
  });

  describe("svcd's database handle", () => {
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
          const [row] = (await h.transaction(async (tx) => tx.execute(sql`select ${round}::int as v`))) as unknown as {
            v: number;
          }[];
          assert.equal(row?.v, round, 'a transaction after it');
          const [plain] = (await h.execute(sql`select 7 as v`)) as unknown as { v: number }[];
          assert.equal(plain?.v, 7, 'and a plain query');
        }
        await new Promise((r) => setImmediate(r));
        assert.deepEqual(uncaught, [], 'nothing thrown outside the queries');
      });
    }

    // Once in five clean-clone CI runs this hung before the patch's last part: when the close was seen before the
    // statements were sent. The middle round sends them after the close for certain (100 ms after the terminate).
    test('relaxed: a transaction whose backend dies while its statements wait behind a new one fails, not hangs', async () => {
      for (let round = 0; round < 3; round++) {
        const tx = d.relaxed.transaction(async (t) => {
          await terminate(await pidOf(t as unknown as Db));
          if (round === 1) await new Promise((r) => setTimeout(r, 100));
          // Statements new to this connection, sent together: the second waits behind the first's describe.
          await Promise.all([
            t.execute(sql`select ${round}::int + 10 as v`),
            t.execute(sql`select ${round}::int + 20 as w`),
          ]);
        });
        const outcome = await Promise.race([
          tx.then(
            () => 'committed',
            () => 'failed',
          ),
          new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5_000)),
        ]);
        assert.equal(outcome, 'failed');
        // (A query sent while the connection is still going may fail too; once it is gone, a new one is made.)
        await new Promise((r) => setTimeout(r, 100));
        const [row] = (await d.relaxed.execute(sql`select ${round}::int as v`)) as unknown as { v: number }[];
        assert.equal(row?.v, round, 'and the handle works after it');
      }
    });

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
