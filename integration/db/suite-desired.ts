import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { ForbiddenError, NotFoundError, StaleWriteError, ValidationError } from '../../src/desired/errors.ts';
import {
  createProfile,
  deleteProfile,
  listProfiles,
  readProfile,
  renameProfile,
  updateProfile,
} from '../../src/desired/profiles.ts';
import {
  createProject,
  deleteProject,
  listProjects,
  readProject,
  renameProject,
  updateProject,
} from '../../src/desired/projects.ts';
import { networks, operations, profiles, storagePools, storageVolumes } from '../../src/desired/schema/index.ts';
import { renderOperation } from '../../src/operations/render-operation.ts';
import { readOperation } from '../../src/operations/operation-store.ts';
import { createStatusSettler } from '../../src/reconcilers/status-settler.ts';
import { readDataVersion, VERSIONED_TABLES } from '../../src/desired/data-versions.ts';
import { localWrites } from '../../src/db/database-state.ts';
import {
  bumpContainerAtInFlight,
  deleteContainerRow,
  insertContainer,
  readContainerById,
} from '../../src/desired/containers.ts';
import {
  assertConflict,
  bumpProfileWithOperation,
  makeOps,
  mustReadOperation,
  profileInput as input,
  query,
  readStatus,
  rejection,
  type SuiteContext,
} from './helpers.ts';

export function defineDesiredTests(ctx: SuiteContext): void {
  test('data versions: a committed write to a table changes its version; reads and rolled-back writes do not', async () => {
    const db = ctx.db();
    const v0 = await readDataVersion(db, ['profiles', 'containers']);
    const containers0 = await readDataVersion(db, ['containers']);
    await listProfiles(db, 'default');
    assert.equal(await readDataVersion(db, ['profiles', 'containers']), v0, 'a read changes nothing');
    await createProfile(db, 'default', 'versioned', input('v'));
    const v1 = await readDataVersion(db, ['profiles', 'containers']);
    assert.notEqual(v1, v0, 'an insert bumps profiles');
    assert.equal(await readDataVersion(db, ['containers']), containers0, 'containers untouched');
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.update(profiles).set({ description: 'x' }).where(eq(profiles.name, 'versioned'));
        throw new Error('roll back');
      }),
      /roll back/,
    );
    // PostgreSQL's counters roll back with the transaction; PGlite's local count may move (harmless: one read more).
    if (!localWrites(db))
      assert.equal(
        await readDataVersion(db, ['profiles', 'containers']),
        v1,
        'a rolled-back update leaves the version',
      );
    const v2 = await readDataVersion(db, ['profiles', 'containers']);
    await deleteProfile(db, 'default', 'versioned');
    assert.notEqual(await readDataVersion(db, ['profiles', 'containers']), v2, 'a delete bumps profiles');

    // storage pools and volumes (migration 0007)
    const pools0 = await readDataVersion(db, ['storage_pools']);
    const volumes0 = await readDataVersion(db, ['storage_volumes']);
    await db.insert(storagePools).values({ name: 'dv-pool', driver: 'dir', description: '', config: {} });
    assert.notEqual(await readDataVersion(db, ['storage_pools']), pools0, 'a pool insert bumps storage_pools');
    assert.equal(await readDataVersion(db, ['storage_volumes']), volumes0, 'volumes untouched');
    await db
      .insert(storageVolumes)
      .values({ id: randomUUID(), pool: 'dv-pool', project: 'default', type: 'custom', name: 'dv-vol', config: {} });
    assert.notEqual(await readDataVersion(db, ['storage_volumes']), volumes0, 'a volume insert bumps storage_volumes');
    await db.delete(storageVolumes).where(eq(storageVolumes.pool, 'dv-pool'));
    await db.delete(storagePools).where(eq(storagePools.name, 'dv-pool'));

    // networks (migration 0010)
    const networks0 = await readDataVersion(db, ['networks']);
    await db.insert(networks).values({ id: randomUUID(), name: 'dv-net', type: 'bridge', description: '', config: {} });
    assert.notEqual(await readDataVersion(db, ['networks']), networks0, 'a network insert bumps networks');
    await db.delete(networks).where(eq(networks.name, 'dv-net'));
  });

  test('every versioned table has its trigger, which only notifies (no counters table since migration 0011)', async () => {
    const db = ctx.db();
    const [gone] = await query<{ t: string | null }>(db, sql`select to_regclass('data_versions')::text as t`);
    assert.equal(gone?.t, null, 'no data_versions table');
    const triggers = await query<{ tbl: string }>(
      db,
      sql`select c.relname as tbl from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid where p.proname = 'bump_data_version' and not t.tgisinternal`,
    );
    for (const table of VERSIONED_TABLES) {
      assert.ok(
        triggers.some((t) => t.tbl === table),
        `a trigger on ${table}`,
      );
    }
  });

  test('on PGlite, what a write reaches is learnt from the schema: an operation write moves no version, a project rename moves profiles too', async (t) => {
    const db = ctx.db();
    const writes = localWrites(db);
    if (!writes) return t.skip('a shared PostgreSQL is always asked');
    assert.ok(writes.reach, 'learnt at open');
    const reach = (table: string, kind: 'insert' | 'update' | 'delete') => {
      const r = writes.reach!.get(table)?.[kind] ?? new Set([table]);
      return r === 'any' ? 'any' : [...r].sort();
    };
    for (const kind of ['insert', 'update', 'delete'] as const) {
      assert.deepEqual(reach('operations', kind), ['operations']);
      assert.deepEqual(reach('reconcile_status', kind), ['reconcile_status']);
      assert.deepEqual(reach('projects', 'insert'), ['projects']);
    }
    // profiles and images cascade both ways, containers on update only (and on to their snapshots and backups).
    assert.deepEqual(reach('projects', 'update'), [
      'container_backups',
      'container_snapshots',
      'containers',
      'image_aliases',
      'images',
      'profiles',
      'projects',
    ]);
    assert.deepEqual(reach('projects', 'delete'), ['image_aliases', 'images', 'profiles', 'projects']);
    assert.deepEqual(reach('storage_pools', 'update'), ['storage_pools', 'storage_volumes', 'volume_snapshots']);
    assert.deepEqual(reach('storage_pools', 'delete'), ['storage_pools']);
    assert.deepEqual(reach('containers', 'delete'), ['container_backups', 'container_snapshots', 'containers']);

    const tables = ['containers', 'profiles', 'projects'] as const;
    const v0 = await readDataVersion(db, [...tables]);
    const { ops } = makeOps(db);
    const row = await ops.startTask({ class: 'task', description: 'no version', project: 'default' }, async () => ({
      done: true,
    }));
    await ops.wait(row.id, 5_000);
    await ops.stop();
    assert.equal(await readDataVersion(db, [...tables]), v0, 'insert and end of an operation');
    await createProject(db, { name: 'reach-a', description: '', config: { 'features.profiles': 'true' } });
    const v1 = await readDataVersion(db, ['profiles']);
    await renameProject(db, 'reach-a', 'reach-b');
    assert.notEqual(await readDataVersion(db, ['profiles']), v1, "the rename cascaded to the project's profiles");
    await deleteProject(db, 'reach-b');
  });

  test('profiles: create, update, rename, delete; generation starts at 1 and each write adds one', async () => {
    const db = ctx.db();
    const created = await createProfile(
      db,
      'default',
      'web',
      input('web', { 'user.a': '1' }, { eth0: { type: 'nic', parent: 'br0' } }),
    );
    assert.equal(created.generation, 1);
    let row = await readProfile(db, 'default', 'web');
    assert.deepEqual(
      [row.description, row.config, row.devices, row.generation],
      ['web', { 'user.a': '1' }, { eth0: { type: 'nic', parent: 'br0' } }, 1],
    );

    await updateProfile(db, 'default', 'web', input('web 2', { 'user.b': '2' }));
    row = await readProfile(db, 'default', 'web');
    assert.deepEqual([row.description, row.config, row.devices, row.generation], ['web 2', { 'user.b': '2' }, {}, 2]);
    await updateProfile(db, 'default', 'web', input('web 3'));
    assert.equal((await readProfile(db, 'default', 'web')).generation, 3);

    const renamed = await renameProfile(db, 'default', 'web', 'web-renamed');
    assert.equal(renamed.generation, 4);
    await assert.rejects(readProfile(db, 'default', 'web'), NotFoundError);
    row = await readProfile(db, 'default', 'web-renamed');
    assert.deepEqual([row.description, row.generation], ['web 3', 4]);
    const names = (await listProfiles(db, 'default')).map((p) => p.name);
    assert.ok(names.includes('web-renamed') && names.includes('default') && !names.includes('web'), names.join(','));

    await deleteProfile(db, 'default', 'web-renamed');
    await assert.rejects(readProfile(db, 'default', 'web-renamed'), NotFoundError);
    await assert.rejects(deleteProfile(db, 'default', 'web-renamed'), NotFoundError);
    await assert.rejects(updateProfile(db, 'default', 'web-renamed', input()), NotFoundError);
    await assert.rejects(renameProfile(db, 'default', 'default', 'other'), ForbiddenError);
    await assert.rejects(deleteProfile(db, 'default', 'default'), ForbiddenError);
    await assert.rejects(createProfile(db, 'no-such-project', 'x', input()), 'a profile needs its project (FK)');
    assert.deepEqual(await listProfiles(db, 'no-such-project'), []);
  });

  test('profiles: creating or renaming onto a taken name is a ConflictError (409) and changes nothing', async () => {
    const db = ctx.db();
    await createProfile(db, 'default', 'dup-a', input('first'));
    await createProfile(db, 'default', 'dup-b', input('b'));
    await assertConflict(createProfile(db, 'default', 'dup-a', input('second')));
    const a = await readProfile(db, 'default', 'dup-a');
    assert.deepEqual([a.description, a.generation], ['first', 1]);
    await assertConflict(renameProfile(db, 'default', 'dup-b', 'dup-a'));
    const b = await readProfile(db, 'default', 'dup-b');
    assert.deepEqual([b.description, b.generation], ['b', 1]);
  });

  test('profiles: of two concurrent creates of one name exactly one fulfils, the other is a ConflictError', async () => {
    const db = ctx.db();
    for (let i = 0; i < 5; i++) {
      const name = `race-${i}`;
      const results = await Promise.allSettled([
        createProfile(db, 'default', name, input('one')),
        createProfile(db, 'default', name, input('two')),
      ]);
      const ok = results.filter((r) => r.status === 'fulfilled');
      const failed = results.filter((r) => r.status === 'rejected');
      assert.equal(ok.length, 1, `round ${i}: one create fulfils`);
      assert.equal(failed.length, 1, `round ${i}: one create rejects`);
      await assertConflict(Promise.reject(failed[0]!.reason));
      const rows = await db
        .select()
        .from(profiles)
        .where(and(eq(profiles.project, 'default'), eq(profiles.name, name)));
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.description, ok[0]!.value.description);
    }
  });

  test('projects: create, update, list; generation starts at 1, each update adds one; duplicates conflict', async () => {
    const db = ctx.db();
    const created = await createProject(db, { name: 'proj-a', description: 'A', config: { 'user.x': '1' } });
    assert.equal(created.generation, 1);
    let p = await readProject(db, 'proj-a');
    assert.deepEqual(
      [p.description, p.config, p.generation],
      ['A', { 'features.images': 'true', 'features.profiles': 'true', 'user.x': '1' }, 1],
    );
    assert.equal(
      (await readProfile(db, 'proj-a', 'default')).generation,
      1,
      'a project with features.profiles gets its own default profile',
    );

    const config = { 'features.images': 'true', 'features.profiles': 'true', 'user.y': '2' };
    await updateProject(db, 'proj-a', { description: 'A2', config });
    p = await readProject(db, 'proj-a');
    assert.deepEqual([p.description, p.config, p.generation], ['A2', config, 2]);
    await updateProject(db, 'proj-a', { description: 'A3', config });
    assert.equal((await readProject(db, 'proj-a')).generation, 3);

    const names = (await listProjects(db)).map((r) => r.name);
    assert.ok(names.includes('default') && names.includes('proj-a'), names.join(','));

    await assertConflict(createProject(db, { name: 'proj-a', description: 'again' }));
    p = await readProject(db, 'proj-a');
    assert.deepEqual([p.description, p.generation], ['A3', 3]);
    await assert.rejects(updateProject(db, 'no-such-project', { description: '', config: {} }), NotFoundError);
  });

  test('projects: rename bumps the generation and carries the profiles along (ON UPDATE CASCADE)', async () => {
    const db = ctx.db();
    await createProject(db, { name: 'proj-r' });
    const renamed = await renameProject(db, 'proj-r', 'proj-r2');
    assert.equal(renamed.generation, 2);
    assert.equal((await readProject(db, 'proj-r2')).generation, 2);
    await assert.rejects(readProject(db, 'proj-r'), NotFoundError);
    assert.deepEqual(await listProfiles(db, 'proj-r'), []);
    assert.deepEqual(
      (await listProfiles(db, 'proj-r2')).map((r) => r.name),
      ['default'],
    );

    await createProject(db, { name: 'proj-taken' });
    await assertConflict(renameProject(db, 'proj-r2', 'proj-taken'));
    assert.equal((await readProject(db, 'proj-r2')).generation, 2);
    assert.deepEqual(
      (await listProfiles(db, 'proj-r2')).map((r) => r.name),
      ['default'],
    );
    await assert.rejects(renameProject(db, 'default', 'elsewhere'), ForbiddenError);
  });

  test('projects: deleting or renaming a non-empty project is refused; an empty one goes with its profile', async () => {
    const db = ctx.db();
    await createProject(db, { name: 'proj-d' });
    await createProfile(db, 'proj-d', 'web', input());
    await assert.rejects(deleteProject(db, 'proj-d'), ValidationError);
    await assert.rejects(renameProject(db, 'proj-d', 'proj-d2'), ValidationError);
    assert.equal((await readProject(db, 'proj-d')).generation, 1);
    assert.deepEqual(
      (await listProfiles(db, 'proj-d')).map((r) => r.name),
      ['default', 'web'],
    );

    await deleteProfile(db, 'proj-d', 'web');
    await deleteProject(db, 'proj-d');
    await assert.rejects(readProject(db, 'proj-d'), NotFoundError);
    assert.deepEqual(await listProfiles(db, 'proj-d'), []);
    await assert.rejects(deleteProject(db, 'default'), ForbiddenError);
  });

  test('desired write: the generation bump and its operation commit together', async () => {
    const db = ctx.db();
    const { ops, clock } = makeOps(db);
    await createProfile(db, 'default', 'x', input());
    const { op, generation } = await bumpProfileWithOperation(db, ops, 'default', 'x');
    assert.equal(generation, 2);
    assert.equal((await readProfile(db, 'default', 'x')).generation, 2);
    const row = await mustReadOperation(db, op.id);
    assert.deepEqual(
      [
        row.class,
        row.description,
        row.project,
        row.node,
        row.statusCode,
        row.targetKind,
        row.targetKey,
        row.targetGeneration,
      ],
      ['task', 'Updating profile x', 'default', 'node-a', 103, 'profile', 'default/x', 2],
    );
    assert.equal(row.deadlineAt?.getTime(), clock.now() + 10 * 60_000);
  });

  test('desired write: a transaction that throws after both writes leaves neither', async () => {
    const db = ctx.db();
    const { ops } = makeOps(db);
    await createProfile(db, 'default', 'rollback', input());
    let id: string | undefined;
    const e = await rejection(
      db.transaction(async (tx) => {
        await tx
          .update(profiles)
          .set({ generation: sql`${profiles.generation} + 1` })
          .where(and(eq(profiles.project, 'default'), eq(profiles.name, 'rollback')));
        const op = await ops.insert(tx, {
          class: 'task',
          description: 'doomed',
          project: 'default',
          target: { kind: 'profile', key: 'default/rollback', generation: 2 },
        });
        id = op.id;
        assert.ok(await readOperation(tx, op.id), 'visible inside the transaction');
        throw new Error('boom after both writes');
      }),
    );
    assert.match(String(e), /boom after both writes/);
    assert.ok(id);
    assert.equal((await readProfile(db, 'default', 'rollback')).generation, 1);
    assert.equal(await readOperation(db, id), undefined);
    assert.deepEqual(await db.select().from(operations).where(eq(operations.targetKey, 'default/rollback')), []);
  });

  test('converged settles operations up to the observed generation as Success and publishes each', async () => {
    const db = ctx.db();
    const { ops, events } = makeOps(db);
    // As the status settler does it: settled, then announced.
    const converged = async (key: string, generation: number) =>
      (await ops.convergedIn(db, 'profile', key, generation))();
    await createProfile(db, 'default', 'conv', input());
    const first = await bumpProfileWithOperation(db, ops, 'default', 'conv');
    const second = await bumpProfileWithOperation(db, ops, 'default', 'conv');
    assert.deepEqual([first.generation, second.generation], [2, 3]);

    await converged('default/conv', first.generation - 1);
    assert.equal((await mustReadOperation(db, first.op.id)).statusCode, 103, 'an older generation settles nothing');
    assert.equal(events.length, 0);

    await converged('default/conv', first.generation);
    const done = await mustReadOperation(db, first.op.id);
    assert.deepEqual([done.statusCode, done.err, done.mayCancel], [200, '', false]);
    assert.equal((await mustReadOperation(db, second.op.id)).statusCode, 103, 'a later generation is still pending');
    assert.equal(events.length, 1);
    assert.equal(events[0]!.type, 'operation');
    assert.equal(events[0]!.project, 'default');
    assert.deepEqual(events[0]!.metadata, renderOperation(done));
    assert.equal(events[0]!.metadata.status, 'Success');

    await converged('default/conv', first.generation);
    assert.equal(events.length, 1, 'a final operation is not settled again');
    await converged('default/conv', 99);
    assert.equal((await mustReadOperation(db, second.op.id)).statusCode, 200);
    assert.equal(events.length, 2);
  });

  test('failed: a transient error leaves operations pending, a terminal one fails them with its message', async () => {
    const db = ctx.db();
    const { ops, events } = makeOps(db);
    await createProfile(db, 'default', 'fail', input());
    await createProfile(db, 'default', 'bystander', input());
    const a = await bumpProfileWithOperation(db, ops, 'default', 'fail');
    const b = await bumpProfileWithOperation(db, ops, 'default', 'fail');
    const other = await bumpProfileWithOperation(db, ops, 'default', 'bystander');

    await ops.failed('profile', 'default/fail', 'transient', false);
    assert.equal((await mustReadOperation(db, a.op.id)).statusCode, 103);
    assert.equal(events.length, 0);

    await ops.failed('profile', 'default/fail', 'image not found', true);
    for (const id of [a.op.id, b.op.id]) {
      const row = await mustReadOperation(db, id);
      assert.deepEqual([row.statusCode, row.err], [400, 'image not found']);
      const ev = events.find((e) => e.metadata.id === id);
      assert.deepEqual(ev?.metadata, renderOperation(row));
    }
    assert.equal(events.length, 2);
    assert.equal((await mustReadOperation(db, other.op.id)).statusCode, 103, 'other keys are untouched');
  });

  test('status settler: observed_generation never goes backwards; convergence clears last_error', async () => {
    const db = ctx.db();
    const { ops } = makeOps(db);
    const settler = createStatusSettler({ db, node: 'n1', ops });
    const key = 'default/settle';
    await createProfile(db, 'default', 'settle', input());
    const g2 = await bumpProfileWithOperation(db, ops, 'default', 'settle');
    const g3 = await bumpProfileWithOperation(db, ops, 'default', 'settle');

    await settler.failed('profile', key, 'disk full', false);
    let s = await readStatus(db, 'profile', key);
    assert.deepEqual([s?.observedGeneration, s?.lastError, s?.terminal], [0, 'disk full', false]);
    assert.equal((await mustReadOperation(db, g2.op.id)).statusCode, 103);

    await settler.converged('profile', key, 2);
    s = await readStatus(db, 'profile', key);
    assert.deepEqual([s?.observedGeneration, s?.lastError, s?.terminal], [2, '', false]);
    assert.equal((await mustReadOperation(db, g2.op.id)).statusCode, 200);
    assert.equal((await mustReadOperation(db, g3.op.id)).statusCode, 103);

    await settler.converged('profile', key, 1);
    assert.equal(
      (await readStatus(db, 'profile', key))?.observedGeneration,
      2,
      'a stale convergence does not lower it',
    );

    await settler.failed('profile', key, 'invalid config', true);
    s = await readStatus(db, 'profile', key);
    assert.deepEqual([s?.observedGeneration, s?.lastError, s?.terminal], [2, 'invalid config', true]);
    const failed = await mustReadOperation(db, g3.op.id);
    assert.deepEqual([failed.statusCode, failed.err], [400, 'invalid config']);

    await settler.converged('profile', key, 3);
    s = await readStatus(db, 'profile', key);
    assert.deepEqual([s?.observedGeneration, s?.lastError, s?.terminal], [3, '', false]);
    assert.equal(await readStatus(db, 'profile', 'default/never'), undefined);
  });

  test("status settler, a removal: the object's rows, its status row and its operations' settlement commit together, announced after the commit; a failed delete leaves all three", async () => {
    const db = ctx.db();
    const { ops, events } = makeOps(db);
    const settler = createStatusSettler({ db, node: 'n1', ops });
    const profileRows = async (name: string) =>
      db
        .select()
        .from(profiles)
        .where(and(eq(profiles.project, 'default'), eq(profiles.name, name)));

    // A failed delete: nothing of the three is written, nothing announced.
    await createProfile(db, 'default', 'gone-bad', input());
    const bad = await bumpProfileWithOperation(db, ops, 'default', 'gone-bad');
    await settler.failed('profile', 'default/gone-bad', 'earlier', false);
    await assert.rejects(
      settler.converged('profile', 'default/gone-bad', bad.generation, undefined, true, (tx) =>
        Promise.all([
          tx.delete(profiles).where(and(eq(profiles.project, 'default'), eq(profiles.name, 'gone-bad'))),
          tx.execute(sql`select 1 / 0`),
        ]),
      ),
      /division by zero/,
    );
    assert.equal((await profileRows('gone-bad')).length, 1, 'the row is still there: the removal is retried');
    assert.equal((await readStatus(db, 'profile', 'default/gone-bad'))?.lastError, 'earlier', 'the status row too');
    assert.equal((await mustReadOperation(db, bad.op.id)).statusCode, 103, 'the operation still runs');
    assert.equal(events.length, 0, 'nothing announced');

    // A removal that commits: all three at once, then the operation is announced.
    let seenAtDelete: number | undefined;
    await settler.converged('profile', 'default/gone-bad', bad.generation, undefined, true, (tx) => {
      seenAtDelete = events.length;
      return tx.delete(profiles).where(and(eq(profiles.project, 'default'), eq(profiles.name, 'gone-bad')));
    });
    assert.equal(seenAtDelete, 0);
    assert.deepEqual(await profileRows('gone-bad'), []);
    assert.equal(await readStatus(db, 'profile', 'default/gone-bad'), undefined);
    const done = await mustReadOperation(db, bad.op.id);
    assert.equal(done.statusCode, 200);
    assert.deepEqual(
      events.map((e) => e.metadata),
      [renderOperation(done)],
    );
  });

  test('a container write left in flight (COMMIT behind its UPDATE): of 10 concurrent ones on one generation exactly one lands, the others end stale', async () => {
    const db = ctx.db();
    const c = await insertContainer(
      db,
      'default',
      'inflight',
      { description: 'start', architecture: 'x86_64', ephemeral: false, profiles: [], config: {}, devices: {} },
      { type: 'none' },
      'stopped',
    );
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, async (_, i) => {
        // The callback returns with the UPDATE unanswered: the transaction commits, then the row (or the error) is known.
        const written = await db.transaction(async (tx) =>
          bumpContainerAtInFlight(tx, c.id, c.generation, { description: `w${i}` }),
        );
        return written.row;
      }),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.equal(won.length, 1, results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'landed')).join(' '));
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof StaleWriteError, String(r.reason));
    const row = await readContainerById(db, c.id);
    assert.deepEqual([row?.description, row?.generation], [`w${won[0]}`, c.generation + 1]);
    // A statement that fails inside such a write fails it whole: nothing of it is committed.
    await assert.rejects(
      db
        .transaction(async (tx) => {
          await tx.execute(sql`update containers set description = 'half' where id = ${c.id}`);
          return bumpContainerAtInFlight(tx, c.id, row!.generation, { project: 'no-such-project' }); // a foreign key it breaks
        })
        .then((w) => w.row),
    );
    assert.equal(
      (await readContainerById(db, c.id))?.description,
      `w${won[0]}`,
      'the earlier statement was rolled back with it',
    );
    await deleteContainerRow(db, c.id);
  });

  test('conditional writes (If-Match): of 10 concurrent updates based on the same generation exactly one lands, the others are stale', async () => {
    const db = ctx.db();
    const p = await createProfile(db, 'default', 'raced', input('start'));
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => updateProfile(db, 'default', 'raced', input(`w${i}`), p.generation)),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.equal(won.length, 1, results.map((r) => r.status).join(' '));
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof StaleWriteError, String(r.reason));
    const row = await readProfile(db, 'default', 'raced');
    assert.deepEqual([row.description, row.generation], [`w${won[0]}`, p.generation + 1]);
    await deleteProfile(db, 'default', 'raced');

    const j = await createProject(db, { name: 'raced', description: 'start', config: {} });
    const projects = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        updateProject(db, 'raced', { description: `w${i}`, config: {} }, j.generation),
      ),
    );
    const projectWon = projects.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.equal(projectWon.length, 1, projects.map((r) => r.status).join(' '));
    for (const r of projects)
      if (r.status === 'rejected') assert.ok(r.reason instanceof StaleWriteError, String(r.reason));
    assert.equal((await readProject(db, 'raced')).description, `w${projectWon[0]}`);
    await deleteProject(db, 'raced');
  });
}
