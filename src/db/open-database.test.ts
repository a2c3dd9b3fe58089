import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { readDataVersion } from '../desired/data-versions.ts';
import { createProfile } from '../desired/profiles.ts';
import { ensureDefaultProject } from '../desired/projects.ts';
import { databaseStateOf } from './database-state.ts';
import { openDatabase } from './open-database.ts';
import { useTempDatabase } from './temp-database.ts';

const temp = useTempDatabase('svcd-open-database-', ensureDefaultProject);

test('embedded database: the data-version triggers are off, and the version still changes with each write (counted locally)', async () => {
  const { db } = temp.database;
  const enabled = (await db.execute(
    sql`select count(*)::int as n from pg_trigger t join pg_proc p on p.oid = t.tgfoid where p.proname = 'bump_data_version' and t.tgenabled <> 'D'`,
  )) as unknown as { rows: { n: number }[] };
  assert.equal(enabled.rows[0]!.n, 0, 'no data-version trigger left enabled');
  const v0 = await readDataVersion(db, ['profiles']);
  await createProfile(db, 'default', 'p1', { description: '', config: {}, devices: {} });
  const v1 = await readDataVersion(db, ['profiles']);
  assert.notEqual(v1, v0, 'a write of profiles changes the version readers see');
  assert.equal(await readDataVersion(db, ['containers']), await readDataVersion(db, ['containers']));
});

test('embedded database: its own state — its write counter is Database.localWrites, a second database has its own, a transaction none', async () => {
  const { database } = temp;
  assert.ok(database.localWrites, 'PGlite: this process is the only writer');
  const state = databaseStateOf(database.db);
  assert.equal(state?.localWrites, database.localWrites);
  assert.ok(state?.facts, 'facts are remembered on the only writer');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-open-database-2-'));
  const other = await openDatabase({ stateDir: dir });
  try {
    assert.ok(other.localWrites);
    assert.notEqual(other.localWrites, database.localWrites, 'not shared between databases');
    assert.notEqual(databaseStateOf(other.db)?.reads, state.reads, 'nor the read cache');
  } finally {
    await other.close();
    await rm(dir, { recursive: true, force: true });
  }
  await database.db.transaction(async (tx) =>
    assert.equal(databaseStateOf(tx), undefined, 'a transaction must read what it wrote'),
  );
});
