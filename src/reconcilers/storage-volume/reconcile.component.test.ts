import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { useTempDatabase } from '../../db/temp-database.ts';
import { ensureDefaultProject } from '../../desired/projects.ts';
import { insertPool } from '../../desired/storage-pools.ts';
import {
  bumpVolume,
  insertSnapshot,
  insertVolume,
  listAllSnapshots,
  markVolumeDeleting,
  readVolumeById,
} from '../../desired/storage-volumes.ts';
import type { VolumeRef } from '../../host/storage/types.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { createSimStorage, type SimStorage } from '../../test-support/sim-storage.ts';
import { createPoolReconciler } from '../storage-pool/reconcile.ts';
import { createVolumeReconciler } from './reconcile.ts';

let root: string;
let storage: SimStorage;
// A pool for the volumes, made by the pool reconciler on the same simulator.
const temp = useTempDatabase('svcd-volume-rec-', async (db) => {
  await ensureDefaultProject(db);
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-sim-volumes-'));
  storage = createSimStorage({ root });
  await insertPool(db, { name: 'vp', driver: 'dir' }, { source: path.join(root, 'vp-src') });
  await createReconcileOnce(db)(createPoolReconciler({ db, node: 'n1', stateDir: root, storage }), 'vp');
});
after(() => rm(root, { recursive: true, force: true }));

function setup() {
  const { db } = temp.database;
  return {
    db,
    volumes: createVolumeReconciler({ db, stateDir: root, node: 'n1', storage }),
    once: createReconcileOnce(db),
  };
}
const custom = (id: string): VolumeRef => ({ id, type: 'custom' });
const pool = { name: 'vp', driver: 'dir', config: {}, stateDir: '' };
const counts = () => ({ ...storage.calls });
const delta = (before: Record<string, number>, method: string) => (storage.calls[method] ?? 0) - (before[method] ?? 0);

test('a new volume is created with its size, and a second reconcile copies and snapshots nothing', async () => {
  const { db, volumes, once } = setup();
  const v = await insertVolume(db, {
    pool: 'vp',
    project: 'default',
    type: 'custom',
    name: 'v-create',
    config: { size: '1GiB' },
  });
  assert.deepEqual(await once(volumes, v.id), { observedGeneration: v.generation });
  assert.deepEqual(storage.volumes.get(`vp/${v.id}`), { size: '1GiB' });
  const before = counts();
  assert.deepEqual(await once(volumes, v.id), { observedGeneration: v.generation });
  assert.equal(delta(before, 'copyVolume') + delta(before, 'ensureSnapshot') + delta(before, 'removeVolume'), 0);
  assert.ok(existsSync(storage.volumePath(pool, custom(v.id))));
});

test("a volume lost behind svcd's back is there again after the next reconcile", async () => {
  const { db, volumes, once } = setup();
  const v = await insertVolume(db, { pool: 'vp', project: 'default', type: 'custom', name: 'v-drift' });
  await once(volumes, v.id);
  await storage.loseVolume('vp', custom(v.id));
  assert.equal(await storage.volumeExists(pool, custom(v.id)), false);
  await once(volumes, v.id);
  assert.equal(await storage.volumeExists(pool, custom(v.id)), true);
});

test('a copy that fails at its live data keeps the snapshot it made and does not copy it again', async () => {
  const { db, volumes, once } = setup();
  const src = await insertVolume(db, { pool: 'vp', project: 'default', type: 'custom', name: 'v-src' });
  await insertSnapshot(db, src, 'snap0');
  await once(volumes, src.id);
  const copy = await insertVolume(db, {
    pool: 'vp',
    project: 'default',
    type: 'custom',
    name: 'v-copy',
    source: { volumeId: src.id },
    copySnapshots: true,
  });
  const [mine] = await listAllSnapshots(db, copy.id);
  const before = counts();
  // The snapshot's copy succeeds; the live data's copy (the second copy) throws.
  storage.failOnce('copyVolume', { skip: 1 });
  await assert.rejects(once(volumes, copy.id), /simulated failure of copyVolume/);
  assert.ok(storage.snapshots.has(`vp/${copy.id}/${mine!.id}`), 'the snapshot made before the crash is kept');
  assert.equal(await storage.volumeExists(pool, custom(copy.id)), false);
  assert.deepEqual(await once(volumes, copy.id), { observedGeneration: copy.generation });
  assert.equal(await storage.volumeExists(pool, custom(copy.id)), true);
  assert.equal(
    delta(before, 'copyVolume'),
    3,
    'snapshot copy, failed live copy, live copy: the snapshot is not copied again',
  );
});

test('a restore is done once, and snapshots and the volume go when deleted', async () => {
  const { db, volumes, once } = setup();
  const v = await insertVolume(db, { pool: 'vp', project: 'default', type: 'custom', name: 'v-restore' });
  const snap = await insertSnapshot(db, v, 's1');
  await once(volumes, v.id);
  assert.ok(storage.snapshots.has(`vp/${v.id}/${snap.id}`));
  await bumpVolume(db, v.id, { restore: { seq: 1, snapshotId: snap.id } });
  await once(volumes, v.id);
  await once(volumes, v.id);
  assert.equal(storage.calls.restoreSnapshot, 1, 'the restore request is carried out once');
  await markVolumeDeleting(db, (await readVolumeById(db, v.id))!);
  await once(volumes, v.id);
  assert.equal(await storage.volumeExists(pool, custom(v.id)), false);
  assert.equal(storage.snapshots.has(`vp/${v.id}/${snap.id}`), false);
  assert.equal(await readVolumeById(db, v.id), undefined);
  assert.deepEqual(await once(volumes, v.id), {}, 'a deleted volume is nothing to do');
});
