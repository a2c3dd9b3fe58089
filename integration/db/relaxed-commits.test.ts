/**
 * Database.relaxed on a real PostgreSQL: what svcd records of the host commits through connections whose
 * commits do not wait for their WAL flush, while desired state keeps the server's setting. Both kinds of
 * connection are one process: a write through either is seen at once by the other's cached reads, and is
 * not taken for another process's (its notification is skipped).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { relaxedOf } from '../../src/db/database-state.ts';
import { openDatabase } from '../../src/db/open-database.ts';
import type { Database, Db } from '../../src/db/types.ts';
import { cachedProfiles } from '../../src/desired/cached-reads.ts';
import { createProfile } from '../../src/desired/profiles.ts';
import { ensureDefaultProject } from '../../src/desired/projects.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

const skip = adminUrl ? false : 'SVCD_TEST_PG_URL is not set';
const setting = async (db: Db, name: string) =>
  ((await db.execute<{ v: string }>(sql`select current_setting(${name}) as v`)) as unknown as { v: string }[])[0]!.v;
const names = async (db: Db) => (await cachedProfiles(db, 'default')).map((p) => p.name).sort();
const input = (description: string) => ({ description, config: {}, devices: {} });

describe('Database.relaxed on PostgreSQL (DATABASE_URL)', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let d: Database;
  before(async () => {
    database = await createTestDatabase();
    d = await openDatabase({ stateDir: '/nonexistent', databaseUrl: database.url });
    await ensureDefaultProject(d.db);
  });
  after(async () => {
    await d?.close();
    await database?.drop();
  });

  test("its commits do not wait for the flush; desired state keeps the server's setting", async () => {
    const plain = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const [server] = await plain`select current_setting('synchronous_commit') as v`;
      assert.notEqual(d.relaxed, d.db, 'connections of their own');
      assert.equal(relaxedOf(d.db), d.relaxed, 'found from db (usage stamps written from the API: touchImageLastUsed)');
      await d.db.transaction(async (tx) => assert.equal(relaxedOf(tx), tx, 'a transaction keeps its own'));
      assert.equal(await setting(d.relaxed, 'synchronous_commit'), 'off');
      assert.equal(await setting(d.db, 'synchronous_commit'), server!.v, 'as the server is set');
      assert.equal(server!.v, 'on', 'the test server flushes at commit (else this test shows nothing)');
      // In a transaction too (each tier connection is made so).
      const inTx = await d.relaxed.transaction(
        async (tx) =>
          (await tx.execute<{ v: string }>(sql`select current_setting('synchronous_commit') as v`)) as unknown as {
            v: string;
          }[],
      );
      assert.equal(inTx[0]!.v, 'off');
    } finally {
      await plain.end();
    }
  });

  test("one process: the same name, and each kind's writes are seen at once through the other", async () => {
    assert.equal(
      await setting(d.relaxed, 'application_name'),
      await setting(d.db, 'application_name'),
      'its notifications are its own, skipped',
    );
    assert.deepEqual(await names(d.db), await names(d.db));
    await createProfile(d.relaxed, 'default', 'recorded', input('written through relaxed'));
    assert.ok((await names(d.db)).includes('recorded'), 'a cached read through db sees it at once');
    await createProfile(d.db, 'default', 'desired', input('written through db'));
    assert.ok((await names(d.relaxed)).includes('desired'), 'and the other way');
  });
});

describe('Database.relaxed on PGlite', () => {
  let dir: string;
  let d: Database;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-relaxed-'));
    d = await openDatabase({ stateDir: dir });
  });
  after(async () => {
    await d?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('is db: its commits never wait for a flush', () => {
    assert.equal(d.relaxed, d.db);
    assert.equal(relaxedOf(d.db), d.db);
  });
});
