/**
 * Cached reads on a PostgreSQL shared by several processes (hosts): each svcd keeps its cached reads per
 * data version, which it learns from the commits PostgreSQL notifies (data-version-listener.ts) and its own
 * writes, without reading anything per request. Two handles opened on one database stand for two
 * processes: what one writes, the other's cached read sees; a listener that lost its connection stops
 * being trusted (reads skip the cache) until it listens again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { databaseStateOf } from '../../src/db/database-state.ts';
import { openDatabase } from '../../src/db/open-database.ts';
import type { Database } from '../../src/db/types.ts';
import { cachedContainerSnapshots, cachedProfiles } from '../../src/desired/cached-reads.ts';
import { readDataVersion } from '../../src/desired/data-versions.ts';
import { createProfile, deleteProfile } from '../../src/desired/profiles.ts';
import { ensureDefaultProject } from '../../src/desired/projects.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';
import { eventually } from '../support/http.ts';

const skip = adminUrl ? false : 'SVCD_TEST_PG_URL is not set';
const input = (description: string) => ({ description, config: {}, devices: {} });
const names = async (d: Database) => (await cachedProfiles(d.db, 'default')).map((p) => p.name).sort();

describe('data versions notified by PostgreSQL', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: Database;
  let b: Database;
  before(async () => {
    database = await createTestDatabase();
    a = await openDatabase({ stateDir: '/nonexistent', databaseUrl: database.url });
    b = await openDatabase({ stateDir: '/nonexistent', databaseUrl: database.url });
    await ensureDefaultProject(a.db);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  test("a cached read sees another process's write, and its own at once", async () => {
    const notified = databaseStateOf(a.db)?.notified;
    assert.ok(notified?.listener.live(), 'the listener hears commits');
    const before = await names(a);
    // A cached answer: a second read is the same object (no query).
    assert.equal(await cachedProfiles(a.db, 'default'), await cachedProfiles(a.db, 'default'));

    await createProfile(b.db, 'default', 'from-b', input('written by the other process'));
    const seen = await eventually(
      async () => (await names(a)).includes('from-b') || undefined,
      "process a sees b's profile",
    );
    assert.ok(seen);
    assert.ok(!before.includes('from-b'));

    // Its own write, read right after the commit (before any notification could be relied on).
    await createProfile(a.db, 'default', 'from-a', input('own'));
    assert.ok((await names(a)).includes('from-a'), 'own write seen at once');
    await deleteProfile(b.db, 'default', 'from-a');
    await eventually(async () => !(await names(a)).includes('from-a') || undefined, "process a sees b's delete");
  });

  test('a committed write notifies its table; a rolled-back one does not', async () => {
    const heard: string[] = [];
    const listener = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await listener.listen('svcd_data_versions', (payload) => heard.push(payload));
      const origin = (await b.db.execute<{ name: string }>(
        sql`select current_setting('application_name') as name`,
      )) as unknown as { name: string }[];
      await assert.rejects(
        b.db.transaction(async (tx) => {
          await createProfile(tx, 'default', 'rolled-back', input('never committed'));
          throw new Error('roll back');
        }),
        /roll back/,
      );
      await createProfile(b.db, 'default', 'notified', input('committed'));
      await eventually(() => heard.length > 0 || undefined, 'the profiles notification');
      assert.deepEqual(
        heard,
        [`profiles ${origin[0]!.name}`],
        'one notification, of the committed write only, naming its writer',
      );
      await deleteProfile(b.db, 'default', 'notified');
    } finally {
      await listener.end();
    }
  });

  test("snapshots of a container are cached per version on PostgreSQL too, and another process's write shows", async () => {
    // No container has snapshots: the answer comes from the cached set of owners.
    assert.deepEqual(await cachedContainerSnapshots(a.db, '00000000-0000-4000-8000-000000000001'), []);
    const v = await readDataVersion(a.db, ['container_snapshots']);
    assert.match(v, /^n/, 'a notified version');
  });

  test('a listener whose connection was killed is not trusted until it listens again, and misses nothing', async () => {
    const listener = databaseStateOf(a.db)!.notified!.listener;
    const admin = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'svcd data versions'`;
      await eventually(() => !listener.live() || undefined, 'the listener is no longer trusted', 5_000);
      // Meanwhile: another process writes; a read of process a is still right (no cached answer).
      const v1 = await readDataVersion(a.db, ['profiles']);
      assert.notEqual(await readDataVersion(a.db, ['profiles']), v1, 'no version is known: each read gets a new one');
      await createProfile(b.db, 'default', 'while-down', input('written while a did not listen'));
      assert.ok((await names(a)).includes('while-down'));
      await eventually(() => listener.live() || undefined, 'listening again', 10_000);
      await deleteProfile(b.db, 'default', 'while-down');
      await eventually(
        async () => !(await names(a)).includes('while-down') || undefined,
        'the delete is seen once notified again',
      );
    } finally {
      await admin.end();
    }
  });
});
