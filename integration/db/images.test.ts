/** Image rows and aliases (src/desired/images.ts) on both drivers: what the API and the container code rely on. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { ConflictError, NotFoundError, ValidationError } from '../../src/desired/errors.ts';
import {
  createAlias,
  deleteImage,
  fingerprintInUse,
  insertImage,
  listAliases,
  listImages,
  readImage,
  renameAlias,
  resolveImage,
  touchImageLastUsed,
  type NewImage,
} from '../../src/desired/images.ts';
import { createProject, deleteProject, ensureDefaultProject } from '../../src/desired/projects.ts';
import { openPgliteTarget, openPostgresTarget, type OpenTarget, type StoreTarget } from './targets.ts';

const image = (fingerprint: string, over: Partial<NewImage> = {}): NewImage => ({
  fingerprint,
  filename: '',
  size: 10,
  architecture: 'x86_64',
  split: false,
  public: false,
  autoUpdate: false,
  cached: false,
  properties: {},
  createdAt: new Date('2024-01-01T00:00:00Z'),
  expiresAt: null,
  ...over,
});
const fp = (c: string) => c.repeat(64);

function defineImageTests(name: string, open: OpenTarget): void {
  describe(name, () => {
    let t: StoreTarget;
    const db = () => t.database.db;
    before(async () => {
      t = await open();
      await ensureDefaultProject(db());
      await createProject(db(), { name: 'own' });
      await createProject(db(), { name: 'borrow', config: { 'features.images': 'false' } });
    });
    after(async () => t?.cleanup());

    test('insert, read by prefix (ambiguous → 400), public filter, duplicates → 409', async () => {
      await insertImage(
        db(),
        'default',
        image(fp('a'), {
          public: true,
          properties: { os: 'debian', release: '11' },
          createdAt: new Date('2023-01-01Z'),
        }),
        [{ name: 'deb' }],
      );
      await insertImage(
        db(),
        'default',
        image(`ab${'c'.repeat(62)}`, {
          properties: { os: 'debian', release: '12' },
          createdAt: new Date('2024-01-01Z'),
        }),
      );
      assert.equal((await readImage(db(), 'default', 'aaaa')).fingerprint, fp('a'));
      await assert.rejects(readImage(db(), 'default', 'a'), ValidationError);
      await assert.rejects(readImage(db(), 'default', 'zz'), NotFoundError);
      assert.equal(
        (await readImage(db(), 'default', 'a', { publicOnly: true })).fingerprint,
        fp('a'),
        'only public ones count for guests',
      );
      assert.deepEqual(
        (await listImages(db(), 'default', { publicOnly: true })).map((i) => i.fingerprint),
        [fp('a')],
      );
      await assert.rejects(insertImage(db(), 'default', image(fp('a'))), ConflictError);
      await assert.rejects(insertImage(db(), 'default', image(fp('d')), [{ name: 'deb' }]), ConflictError);
      assert.equal(await fingerprintInUse(db(), fp('d')), false, 'the failed insert left no row');
    });

    test('features.images=false borrows default images; another project has its own', async () => {
      assert.equal((await listImages(db(), 'borrow')).length, 2);
      assert.equal((await listImages(db(), 'own')).length, 0);
      await insertImage(db(), 'own', image(fp('a')));
      assert.equal((await readImage(db(), 'own', fp('a'))).project, 'own');
    });

    test('resolveImage by alias, fingerprint prefix, or the most recent image with the properties', async () => {
      assert.equal((await resolveImage(db(), 'default', { alias: 'deb' })).fingerprint, fp('a'));
      assert.equal((await resolveImage(db(), 'borrow', { alias: 'deb' })).fingerprint, fp('a'));
      assert.equal((await resolveImage(db(), 'default', { fingerprint: 'abc' })).fingerprint, `ab${'c'.repeat(62)}`);
      assert.equal(
        (await resolveImage(db(), 'default', { properties: { os: 'debian' } })).fingerprint,
        `ab${'c'.repeat(62)}`,
        'the newest wins',
      );
      assert.equal(
        (await resolveImage(db(), 'default', { properties: { os: 'debian', release: '11' } })).fingerprint,
        fp('a'),
      );
      await assert.rejects(resolveImage(db(), 'default', { properties: { os: 'alpine' } }), NotFoundError);
      await assert.rejects(resolveImage(db(), 'default', { alias: 'nope' }), NotFoundError);
      await assert.rejects(resolveImage(db(), 'default', {}), ValidationError);
    });

    test('touchImageLastUsed: 40 creates at once cost at most two updates of the row, which keeps the latest stamp', async () => {
      // Counts the row's updates (a statement-level trigger fires even for an update that matched nothing).
      await db().execute(sql`create table if not exists touch_count (n integer not null)`);
      await db().execute(
        sql`create or replace function count_touch() returns trigger language plpgsql as $$ begin insert into touch_count values (1); return null; end $$`,
      );
      await db().execute(
        sql`create trigger count_touch after update on images for each statement execute function count_touch()`,
      );
      try {
        const base = Date.parse('2025-06-01T00:00:00Z');
        const stamps = Array.from({ length: 40 }, (_, i) => new Date(base + ((i * 7) % 40) * 1000));
        await Promise.all(stamps.map((at) => touchImageLastUsed(db(), 'default', fp('a'), at)));
        const r = (await db().execute(sql`select count(*)::int as n from touch_count`)) as unknown as
          | { n: number }[]
          | { rows: { n: number }[] };
        const n = (Array.isArray(r) ? r : r.rows)[0]!.n;
        assert.ok(n >= 1 && n <= 2, `updates of the image row: ${n}`);
        assert.equal(
          (await readImage(db(), 'default', fp('a'))).lastUsedAt?.toISOString(),
          new Date(base + 39_000).toISOString(),
          'the latest stamp',
        );
      } finally {
        await db().execute(sql`drop trigger count_touch on images`);
        await db().execute(sql`drop table touch_count`);
      }
    });

    test('touchImageLastUsed; aliases rename (409) and go with their image; a project delete takes its rows', async () => {
      const at = new Date('2025-05-05T05:05:05Z');
      await touchImageLastUsed(db(), 'borrow', fp('a'), at);
      assert.equal((await readImage(db(), 'default', fp('a'))).lastUsedAt?.toISOString(), at.toISOString());
      await createAlias(db(), 'default', { name: 'other', target: 'abc' });
      await assert.rejects(renameAlias(db(), 'default', 'other', 'deb'), ConflictError);
      await renameAlias(db(), 'default', 'other', 'newer');
      assert.deepEqual(
        (await listAliases(db(), 'default')).map((a) => a.name),
        ['deb', 'newer'],
      );
      assert.equal(await deleteImage(db(), 'default', fp('a')), false, 'project "own" still has these files');
      assert.deepEqual(
        (await listAliases(db(), 'default')).map((a) => a.name),
        ['newer'],
      );
      await deleteImage(db(), 'own', fp('a'));
      await deleteProject(db(), 'own');
      assert.equal(await fingerprintInUse(db(), fp('a')), false);
    });
  });
}

defineImageTests('images on PGlite', openPgliteTarget);
defineImageTests('images on PostgreSQL', openPostgresTarget);
