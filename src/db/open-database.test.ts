import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { readDataVersion } from '../desired/data-versions.ts';
import { createProfile } from '../desired/profiles.ts';
import { ensureDefaultProject } from '../desired/projects.ts';
import { dataVersions } from '../desired/schema/index.ts';
import { useTempDatabase } from './temp-database.ts';

const temp = useTempDatabase('svcd-open-database-', ensureDefaultProject);

test('embedded database: the data_versions triggers are off, and the version still changes with each write (counted locally)', async () => {
  const { db } = temp.database;
  const enabled = (await db.execute(
    sql`select count(*)::int as n from pg_trigger t join pg_proc p on p.oid = t.tgfoid where p.proname = 'bump_data_version' and t.tgenabled <> 'D'`,
  )) as unknown as { rows: { n: number }[] };
  assert.equal(enabled.rows[0]!.n, 0, 'no data_versions trigger left enabled');
  const before = await db.select().from(dataVersions);
  const v0 = await readDataVersion(db, ['profiles']);
  await createProfile(db, 'default', 'p1', { description: '', config: {}, devices: {} });
  const v1 = await readDataVersion(db, ['profiles']);
  assert.notEqual(v1, v0, 'a write of profiles changes the version readers see');
  assert.deepEqual(await db.select().from(dataVersions), before, 'the counters table is not written');
  assert.equal(await readDataVersion(db, ['containers']), await readDataVersion(db, ['containers']));
});
