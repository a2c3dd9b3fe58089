import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../../src/db/types.ts';
import { insertContainerSnapshot } from '../../src/desired/container-snapshots.ts';
import { insertContainer, markContainerDeleting, type ContainerInput } from '../../src/desired/containers.ts';
import { ValidationError } from '../../src/desired/errors.ts';
import {
  createProfile,
  deleteProfile,
  lockProfiles,
  readProfile,
  renameProfile,
  updateProfile,
} from '../../src/desired/profiles.ts';
import { createProject, deleteProject, ensureDefaultProject, readProject } from '../../src/desired/projects.ts';
import {
  containers,
  containerSnapshots,
  images,
  profiles,
  projects,
  storagePools,
  storageVolumes,
} from '../../src/desired/schema/index.ts';
import { usedByReader } from '../../src/desired/used-by.ts';
import { profileInput, rejection } from './helpers.ts';
import { openPgliteTarget, openPostgresTarget, type OpenTarget, type StoreTarget } from './targets.ts';

const ct = (profileNames: string[], devices: ContainerInput['devices'] = {}): ContainerInput => ({
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles: profileNames,
  config: {},
  devices,
});
const newContainer = (
  db: DbOrTx,
  project: string,
  name: string,
  profileNames: string[],
  devices: ContainerInput['devices'] = {},
) => insertContainer(db, project, name, ct(profileNames, devices), { type: 'none' }, 'stopped');
const profilesOf = async (db: Db, name: string) =>
  (await db.select({ p: containers.profiles }).from(containers).where(eq(containers.name, name)))[0]?.p;

/** Run `fn` while a query that blocks has been issued: resolves once the backend shows it waiting on a lock. */
async function waitUntilBlocked(db: Db): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const rows = (await db.execute(
      sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
    )) as unknown as { n: number }[] | { rows: { n: number }[] };
    const n = Array.isArray(rows) ? rows[0]!.n : rows.rows[0]!.n;
    if (n > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no query ever waited on a lock');
}

function defineUsedBySuite(name: string, open: OpenTarget): void {
  describe(name, () => {
    let t: StoreTarget | undefined;
    const db = () => t!.database.db;
    before(async () => {
      t = await open();
      await ensureDefaultProject(db());
      await db().insert(storagePools).values({ name: 'ub-pool', driver: 'dir', config: {} });
      await db().insert(storagePools).values({ name: 'ub-other', driver: 'dir', config: {} });
    });
    after(async () => t?.cleanup());

    test('used_by of profiles, projects, pools and volumes: containers, snapshots, images, profiles, custom volumes', async () => {
      const d = db();
      // "shared" uses the default project's profiles; "own" has its own.
      await createProject(d, {
        name: 'ub-shared',
        config: { 'features.profiles': 'false', 'features.images': 'false' },
      });
      await createProject(d, { name: 'ub-own' });
      await createProfile(
        d,
        'default',
        'ub-web',
        profileInput('', {}, { data: { type: 'disk', pool: 'ub-pool', source: 'ub-vol', path: '/srv' } }),
      );
      await createProfile(d, 'ub-own', 'ub-web', profileInput());
      await d.insert(storageVolumes).values({
        id: crypto.randomUUID(),
        pool: 'ub-pool',
        project: 'default',
        type: 'custom',
        name: 'ub-vol',
        config: {},
      });
      const root = { root: { type: 'disk', path: '/', pool: 'ub-pool' } };
      const a = await newContainer(d, 'default', 'ub-a', ['default', 'ub-web'], root);
      await newContainer(d, 'ub-shared', 'ub-b', ['ub-web'], root);
      await newContainer(d, 'ub-own', 'ub-c', ['ub-web'], root);
      await newContainer(d, 'default', 'ub-d', [], { root: { type: 'disk', path: '/', pool: 'ub-other' } });
      const gone = await newContainer(d, 'default', 'ub-gone', ['ub-web'], root);
      await markContainerDeleting(d, gone);
      await insertContainerSnapshot(d, a, 'snap0');
      await d.insert(images).values({
        project: 'ub-own',
        fingerprint: 'ab'.repeat(32),
        size: 1,
        architecture: 'x86_64',
        createdAt: new Date(),
      });

      const r = usedByReader(d);
      assert.deepEqual(await r.profile('default', 'ub-web'), [
        '/1.0/containers/ub-a',
        '/1.0/containers/ub-a/snapshots/snap0',
        '/1.0/containers/ub-b?project=ub-shared',
      ]);
      assert.deepEqual(await r.profile('ub-own', 'ub-web'), ['/1.0/containers/ub-c?project=ub-own']);
      assert.deepEqual(await r.profile('ub-own', 'default'), []);
      assert.deepEqual(await r.project('ub-own'), [
        '/1.0/containers/ub-c?project=ub-own',
        `/1.0/images/${'ab'.repeat(32)}?project=ub-own`,
        '/1.0/profiles/default?project=ub-own',
        '/1.0/profiles/ub-web?project=ub-own',
      ]);
      assert.deepEqual(await r.project('ub-shared'), ['/1.0/containers/ub-b?project=ub-shared']);
      // A container attaches the volume through its profile: both are listed.
      assert.deepEqual(await r.volume({ pool: 'ub-pool', type: 'custom', name: 'ub-vol' }), [
        '/1.0/containers/ub-a',
        '/1.0/containers/ub-b?project=ub-shared',
        '/1.0/profiles/ub-web',
      ]);
      assert.deepEqual(await r.pool('ub-other'), ['/1.0/containers/ub-d']);
      const pool = await r.pool('ub-pool');
      for (const u of [
        '/1.0/profiles/ub-web',
        '/1.0/containers/ub-a',
        '/1.0/containers/ub-b?project=ub-shared',
        '/1.0/containers/ub-c?project=ub-own',
        '/1.0/storage-pools/ub-pool/volumes/custom/ub-vol',
      ])
        assert.ok(pool.includes(u), `${u} in ${pool.join(' ')}`);
      assert.ok(!pool.some((u) => u.includes('ub-gone')), 'a container being deleted uses nothing');
    });

    test('one reader reads each table once, whatever the number of objects asked about', async () => {
      const d = db();
      const tables: string[] = [];
      // Count the selects the reader issues (a drizzle select is built by db.select().from(table)...).
      const counting = new Proxy(d, {
        get(target, prop, recv) {
          if (prop !== 'select') return Reflect.get(target, prop, recv);
          return (...args: unknown[]) => {
            const builder = (target.select as (...a: unknown[]) => ReturnType<Db['select']>)(...args);
            return new Proxy(builder, {
              get(b, p, r) {
                if (p !== 'from') return Reflect.get(b, p, r);
                return (table: unknown) => {
                  tables.push(String((table as Record<symbol, unknown>)[Symbol.for('drizzle:Name')]));
                  return b.from(table as never);
                };
              },
            });
          };
        },
      }) as Db;
      const r = usedByReader(counting);
      const names = (await d.select({ name: profiles.name }).from(profiles).where(eq(profiles.project, 'default'))).map(
        (p) => p.name,
      );
      await Promise.all(names.map((n) => r.profile('default', n)));
      const projectNames = (await d.select({ name: projects.name }).from(projects)).map((p) => p.name);
      await Promise.all(projectNames.map((n) => r.project(n)));
      await Promise.all(['ub-pool', 'ub-other', 'default'].map((p) => r.pool(p)));
      assert.ok(names.length >= 2 && projectNames.length >= 3, 'several objects of each kind were asked about');
      assert.deepEqual([...tables].sort(), [...new Set(tables)].sort(), `each table read once: ${tables.join(', ')}`);
    });

    test('a profile in use cannot be deleted: a ValidationError naming its users, nothing changes', async () => {
      const d = db();
      const before = await readProfile(d, 'default', 'ub-web');
      const e = await rejection(deleteProfile(d, 'default', 'ub-web'));
      assert.ok(e instanceof ValidationError, String(e));
      assert.match(e.message, /^Profile is currently in use by \/1\.0\/containers\/ub-a, /);
      assert.deepEqual(await readProfile(d, 'default', 'ub-web'), before);
      // Used only by a snapshot: still in use.
      await createProfile(d, 'default', 'ub-snaponly', profileInput());
      const c = await newContainer(d, 'default', 'ub-s', ['ub-snaponly'], {
        root: { type: 'disk', path: '/', pool: 'ub-pool' },
      });
      await insertContainerSnapshot(d, c, 'keep');
      await d.update(containers).set({ profiles: [] }).where(eq(containers.id, c.id));
      assert.match(
        ((await rejection(deleteProfile(d, 'default', 'ub-snaponly'))) as Error).message,
        /ub-s\/snapshots\/keep/,
      );
      await d.delete(containerSnapshots).where(eq(containerSnapshots.containerId, c.id));
      await deleteProfile(d, 'default', 'ub-snaponly');
      await d.delete(containers).where(eq(containers.id, c.id));
    });

    test('renaming a profile in use: containers and snapshots follow, in their order, in every project using it', async () => {
      const d = db();
      await renameProfile(d, 'default', 'ub-web', 'ub-front');
      assert.deepEqual(await profilesOf(d, 'ub-a'), ['default', 'ub-front']);
      assert.deepEqual(await profilesOf(d, 'ub-b'), ['ub-front']);
      assert.deepEqual(await profilesOf(d, 'ub-c'), ['ub-web'], 'a project with its own profiles is not touched');
      const [snap] = await d
        .select({ p: containerSnapshots.profiles })
        .from(containerSnapshots)
        .where(eq(containerSnapshots.name, 'snap0'));
      assert.deepEqual(snap!.p, ['default', 'ub-front']);
      assert.deepEqual(await usedByReader(d).profile('default', 'ub-web'), []);
      assert.equal((await usedByReader(d).profile('default', 'ub-front')).length, 3);
      await renameProfile(d, 'default', 'ub-front', 'ub-web');
      assert.deepEqual(await profilesOf(d, 'ub-a'), ['default', 'ub-web']);
    });

    test('a profile update that would leave a container using it invalid is refused; one already invalid does not block', async () => {
      const d = db();
      await createProfile(
        d,
        'default',
        'ub-root',
        profileInput('', {}, { root: { type: 'disk', path: '/', pool: 'ub-pool' } }),
      );
      await newContainer(d, 'default', 'ub-rooted', ['ub-root']);
      const before = await readProfile(d, 'default', 'ub-root');
      const e = await rejection(updateProfile(d, 'default', 'ub-root', profileInput('no root')));
      assert.ok(e instanceof ValidationError, String(e));
      assert.match(
        e.message,
        /^At least one container relies on this profile: \/1\.0\/containers\/ub-rooted would be invalid: A container needs a root disk device/,
      );
      assert.deepEqual(await readProfile(d, 'default', 'ub-root'), before, 'nothing written');
      // Moving the root disk to another existing pool is fine; to a missing one is not.
      await updateProfile(
        d,
        'default',
        'ub-root',
        profileInput('', {}, { root: { type: 'disk', path: '/', pool: 'ub-other' } }),
      );
      assert.match(
        (
          (await rejection(
            updateProfile(
              d,
              'default',
              'ub-root',
              profileInput('', {}, { root: { type: 'disk', path: '/', pool: 'gone' } }),
            ),
          )) as Error
        ).message,
        /storage pool "gone" does not exist/,
      );
      // A container that is invalid already (its own root disk names a pool that went away) does not block edits.
      await newContainer(d, 'default', 'ub-broken', ['ub-root'], {
        root: { type: 'disk', path: '/', pool: 'ub-pool' },
      });
      await d
        .update(containers)
        .set({ devices: { root: { type: 'disk', path: '/', pool: 'vanished' } } })
        .where(eq(containers.name, 'ub-broken'));
      const row = await updateProfile(
        d,
        'default',
        'ub-root',
        profileInput('edited', {}, { root: { type: 'disk', path: '/', pool: 'ub-other' } }),
      );
      assert.equal(row.description, 'edited');
      assert.equal(row.generation, (await readProfile(d, 'default', 'ub-root')).generation);
      await d.delete(containers).where(eq(containers.name, 'ub-broken'));
      await d.delete(containers).where(eq(containers.name, 'ub-rooted'));
      await deleteProfile(d, 'default', 'ub-root');
    });

    test('a container write names only existing profiles (lockProfiles): a missing one is a ValidationError', async () => {
      const d = db();
      await d.transaction(async (tx) => lockProfiles(tx, 'default', ['default', 'ub-web']));
      const e = await rejection(d.transaction(async (tx) => lockProfiles(tx, 'default', ['default', 'nope'])));
      assert.ok(e instanceof ValidationError);
      assert.match(e.message, /Profile "nope" does not exist/);
    });

    test('a project holding anything cannot be deleted; its own default profile does not count', async () => {
      const d = db();
      const e = await rejection(deleteProject(d, 'ub-own'));
      assert.ok(e instanceof ValidationError, String(e));
      assert.match(
        e.message,
        /^Only empty projects can be removed: project "ub-own" still holds \/1\.0\/containers\/ub-c\?project=ub-own/,
      );
      assert.equal((await readProject(d, 'ub-own')).name, 'ub-own');
      await d.delete(containers).where(eq(containers.project, 'ub-own'));
      assert.match(((await rejection(deleteProject(d, 'ub-own'))) as Error).message, /images/);
      await d.delete(images).where(eq(images.project, 'ub-own'));
      assert.match(
        ((await rejection(deleteProject(d, 'ub-own'))) as Error).message,
        /profiles\/ub-web\?project=ub-own/,
      );
      await deleteProfile(d, 'ub-own', 'ub-web');
      await deleteProject(d, 'ub-own');
    });

    test('concurrent: a profile delete waits for a container write holding the profile, then sees it (PostgreSQL)', async (tc) => {
      if (t!.database.driver !== 'postgres') return tc.skip('PGlite runs one transaction at a time');
      const d = db();
      await createProfile(d, 'default', 'ub-race', profileInput());
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const writer = d.transaction(async (tx) => {
        await lockProfiles(tx, 'default', ['ub-race']);
        locked();
        await held;
        await newContainer(tx, 'default', 'ub-racer', ['ub-race']);
      });
      await isLocked;
      const del = rejection(deleteProfile(d, 'default', 'ub-race'));
      await waitUntilBlocked(d);
      release();
      await writer;
      const e = await del;
      assert.ok(e instanceof ValidationError, String(e));
      assert.match(e.message, /ub-racer/);
      assert.equal((await readProfile(d, 'default', 'ub-race')).name, 'ub-race');

      // The other order: the delete holds the row first; the container write then finds the profile gone.
      await d.delete(containers).where(eq(containers.name, 'ub-racer'));
      let go!: () => void;
      const proceed = new Promise<void>((r) => (go = r));
      let deleting!: () => void;
      const isDeleting = new Promise<void>((r) => (deleting = r));
      const deleter = d.transaction(async (tx) => {
        await tx.select().from(profiles).where(eq(profiles.name, 'ub-race')).for('update');
        await tx.delete(profiles).where(eq(profiles.name, 'ub-race'));
        deleting();
        await proceed;
      });
      await isDeleting;
      const write = rejection(d.transaction(async (tx) => lockProfiles(tx, 'default', ['ub-race'])));
      await waitUntilBlocked(d);
      go();
      await deleter;
      assert.match(((await write) as Error).message, /Profile "ub-race" does not exist/);
    });

    test('concurrent: a project delete waits for a container insert into it, then refuses (PostgreSQL)', async (tc) => {
      if (t!.database.driver !== 'postgres') return tc.skip('PGlite runs one transaction at a time');
      const d = db();
      await createProject(d, { name: 'ub-racing' });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let inserted!: () => void;
      const isInserted = new Promise<void>((r) => (inserted = r));
      const writer = d.transaction(async (tx) => {
        await newContainer(tx, 'ub-racing', 'ub-inside', []);
        inserted();
        await held;
      });
      await isInserted;
      const del = rejection(deleteProject(d, 'ub-racing'));
      await waitUntilBlocked(d);
      release();
      await writer;
      const e = await del;
      assert.ok(e instanceof ValidationError, String(e));
      assert.match(e.message, /ub-inside/);
    });
  });
}

defineUsedBySuite('used_by on PGlite', openPgliteTarget);
defineUsedBySuite('used_by on PostgreSQL', openPostgresTarget);
