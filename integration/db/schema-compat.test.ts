/**
 * Members of different svcd versions on one database (src/db/schema-compat.ts), on both engines: a database a
 * newer svcd migrated further is still opened while its floor allows this svcd, and refused, unchanged, once
 * it does not. A newer svcd is played by planting its record: a migration applied that this svcd does not know,
 * and the floor its breaking migration set.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { migrationsFolder } from '../../src/db/open-database.ts';
import { floorOf, readLocalSchema, SchemaTooNewError } from '../../src/db/schema-compat.ts';
import { openPgliteTarget, openPostgresTarget, type OpenTarget, type StoreTarget } from './targets.ts';

const local = readLocalSchema(migrationsFolder);
const newest = local.entries.at(-1)!;

function suite(name: string, open: OpenTarget, skip?: string) {
  describe(name, { skip }, () => {
    let target: StoreTarget | undefined;
    after(() => target?.cleanup());

    test('ahead but compatible: opened; ahead and past this svcd: refused, and nothing changed', async () => {
      target = await open();
      const db = await target.unopened();
      // This svcd's migrations, then a newer svcd's: one more migration, additive.
      await (await db.open()).close();
      await db.exec(
        `insert into drizzle.__drizzle_migrations (hash, created_at) values ('a newer svcd', ${newest.when + 1000})`,
      );
      const reopened = await db.open();
      assert.equal((await reopened.db.execute('select 1 as one' as never)) !== undefined, true);
      await reopened.close();
      // The newer svcd's next migration is breaking: the floor is past this svcd.
      await db.exec(`update drizzle.svcd_schema_floor set floor = ${newest.idx + 1}`);
      await assert.rejects(db.open(), (e: unknown) => {
        assert.ok(e instanceof SchemaTooNewError, String(e));
        assert.match(e.message, new RegExp(`needs migration ${newest.idx + 1} or later`));
        assert.match(e.message, /1 migration\(s\) applied that it does not know/);
        return true;
      });
      // A svcd whose migrations reach the floor opens it again (the floor is never lowered by an older one).
      await db.exec(`update drizzle.svcd_schema_floor set floor = ${Math.max(floorOf(local), newest.idx)}`);
      await (await db.open()).close();
    });
  });
}

suite('schema compatibility on PGlite', openPgliteTarget);
suite(
  'schema compatibility on PostgreSQL',
  openPostgresTarget,
  process.env.SVCD_TEST_PG_URL ? undefined : 'SVCD_TEST_PG_URL unset',
);
