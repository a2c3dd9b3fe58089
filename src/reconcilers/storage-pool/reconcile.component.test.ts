import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { useTempDatabase } from '../../db/temp-database.ts';
import { ensureDefaultProject } from '../../desired/projects.ts';
import { storagePools } from '../../desired/schema/index.ts';
import { insertPool, markPoolDeleting } from '../../desired/storage-pools.ts';
import { insertVolume, markVolumeDeleting, readVolume } from '../../desired/storage-volumes.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { createSimStorage } from '../../test-support/sim-storage.ts';
import { readMemberFacts } from '../../desired/member-status.ts';
import { createVolumeReconciler } from '../storage-volume/reconcile.ts';
import { createPoolReconciler } from './reconcile.ts';

const temp = useTempDatabase('svcd-pool-rec-', ensureDefaultProject);
let root: string;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-sim-pools-'));
});
after(() => rm(root, { recursive: true, force: true }));

function setup() {
  const { db } = temp.database;
  const storage = createSimStorage({ root });
  const changed: string[] = [];
  const pools = createPoolReconciler({
    db,
    node: 'n1',
    stateDir: root,
    storage,
    onHostChange: async (p) => void changed.push(p),
  });
  const volumes = createVolumeReconciler({ db, stateDir: root, node: 'n1', storage });
  return { db, storage, pools, volumes, changed, once: createReconcileOnce(db) };
}

test('a new pool is created, a second reconcile changes nothing, and the pool is listed', async () => {
  const { db, storage, pools, changed, once } = setup();
  const row = await insertPool(db, { name: 'p-create', driver: 'dir' }, { source: path.join(root, 'src-a') });
  assert.deepEqual(await once(pools, 'p-create'), { observedGeneration: row.generation });
  assert.ok(storage.pools.has('p-create'));
  assert.deepEqual(await readMemberFacts(db, 'n1', 'storage-pool', 'p-create'), { mountOptions: '' });
  assert.deepEqual(await once(pools, 'p-create'), { observedGeneration: row.generation });
  assert.deepEqual([...storage.pools], ['p-create']);
  assert.deepEqual(changed, ['p-create', 'p-create'], 'the observers are told each time');
  assert.ok((await pools.listKeys()).includes('p-create'));
});

test("a pool unmounted behind svcd's back is mounted again", async () => {
  const { db, storage, pools, once } = setup();
  await insertPool(db, { name: 'p-drift', driver: 'dir' }, { source: path.join(root, 'src-b') });
  await once(pools, 'p-drift');
  storage.unmountPool('p-drift');
  assert.equal((await storage.poolHealth({ name: 'p-drift', driver: 'dir', config: {}, stateDir: root })).ready, false);
  await once(pools, 'p-drift');
  assert.equal((await storage.poolHealth({ name: 'p-drift', driver: 'dir', config: {}, stateDir: root })).ready, true);
});

test('a pool whose creation failed is created by the retry, once', async () => {
  const { db, storage, pools, once } = setup();
  const row = await insertPool(db, { name: 'p-crash', driver: 'dir' }, { source: path.join(root, 'src-c') });
  storage.failOnce('ensurePool');
  await assert.rejects(once(pools, 'p-crash'), /simulated failure of ensurePool/);
  assert.equal(storage.pools.has('p-crash'), false);
  assert.deepEqual(await once(pools, 'p-crash'), { observedGeneration: row.generation });
  assert.ok(storage.pools.has('p-crash'));
  assert.equal(storage.calls.ensurePool, 2);
});

test('a pool marked for deletion waits for its volumes, then goes from the host and the database', async () => {
  const { db, storage, pools, volumes, once } = setup();
  await insertPool(db, { name: 'p-del', driver: 'dir' }, { source: path.join(root, 'src-d') });
  await once(pools, 'p-del');
  const vol = await insertVolume(db, { pool: 'p-del', project: 'default', type: 'custom', name: 'v' });
  await once(volumes, vol.id);
  await markPoolDeleting(db, 'p-del').catch(() => undefined);
  // A pool still used cannot be marked through the API; the reconciler holds its own line too.
  await db.update(storagePools).set({ deletingAt: new Date() }).where(eq(storagePools.name, 'p-del'));
  await assert.rejects(once(pools, 'p-del'), /waiting for 1 volume\(s\) on pool "p-del"/);
  assert.ok(storage.pools.has('p-del'));
  await markVolumeDeleting(db, await readVolume(db, 'p-del', 'default', 'custom', 'v'));
  await once(volumes, vol.id);
  await once(pools, 'p-del');
  assert.equal(storage.pools.has('p-del'), false);
  assert.deepEqual(await db.select().from(storagePools).where(eq(storagePools.name, 'p-del')), []);
});
