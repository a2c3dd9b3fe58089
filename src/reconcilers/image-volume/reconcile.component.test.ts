import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { useTempDatabase } from '../../db/temp-database.ts';
import { insertContainer } from '../../desired/containers.ts';
import { deleteImage, insertImage, type NewImage } from '../../desired/images.ts';
import { storageVolumes } from '../../desired/schema/index.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { createContainerReconciler } from '../container/reconcile.ts';
import { createImageVolumeReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-image-volume-rec-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-images-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

/** The container and image-volume reconcilers sharing one agent's rootfs state, with an unpack that writes a tiny rootfs. */
function setup() {
  const { db } = temp.database;
  const unpacked: string[] = [];
  const deps = simContainerDeps({
    db,
    stateDir,
    storage,
    lxc: createSimLxc(),
    imageFiles: async (fp) => ({ meta: `/images/${fp}` }),
    unpack: {
      unpackImage: async (files, target) => {
        storage.calls.unpackImage = (storage.calls.unpackImage ?? 0) + 1;
        if (unpacked.includes('fail-next')) {
          unpacked.splice(unpacked.indexOf('fail-next'), 1);
          throw new Error('tar: simulated failure');
        }
        await mkdir(path.join(target, 'rootfs', 'etc'), { recursive: true });
        await writeFile(path.join(target, 'rootfs', 'etc', 'hostname'), files.meta);
        unpacked.push(files.meta);
      },
    },
  });
  return {
    db,
    unpacked,
    containers: createContainerReconciler(deps),
    imageVolumes: createImageVolumeReconciler(deps),
    once: createReconcileOnce(db),
  };
}

const input = {
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles: ['default'],
  config: {},
  devices: {},
};
const imageVolumeRows = (fp: string) =>
  temp.database.db
    .select()
    .from(storageVolumes)
    .where(and(eq(storageVolumes.type, 'image'), eq(storageVolumes.name, fp)));
const image = (fp: string): NewImage => ({
  fingerprint: fp,
  filename: '',
  size: 1,
  architecture: 'x86_64',
  properties: {},
  createdAt: new Date(),
  split: false,
  public: false,
  autoUpdate: false,
  cached: false,
  expiresAt: null,
});

test('an image is unpacked once per pool, and its volume stays while the image exists', async () => {
  const { db, unpacked, containers, imageVolumes, once } = setup();
  await insertImage(db, 'default', image('fp-keep'));
  const a = await insertContainer(db, 'default', 'img-a', input, { type: 'image', fingerprint: 'fp-keep' }, 'stopped');
  const b = await insertContainer(db, 'default', 'img-b', input, { type: 'image', fingerprint: 'fp-keep' }, 'stopped');
  await once(containers, a.id);
  await once(containers, b.id);
  assert.deepEqual(unpacked, ['/images/fp-keep'], 'one unpack for both');
  const [vol] = await imageVolumeRows('fp-keep');
  assert.ok(
    await storage.volumeExists(
      { name: 'default', driver: 'dir', config: {}, stateDir },
      { id: vol!.id, type: 'image' },
    ),
  );
  assert.ok(
    existsSync(
      path.join(
        storage.volumePath({ name: 'default', driver: 'dir', config: {}, stateDir }, { id: b.id, type: 'container' }),
        'rootfs',
        'etc',
        'hostname',
      ),
    ),
  );
  await once(imageVolumes, vol!.id);
  assert.equal((await imageVolumeRows('fp-keep')).length, 1, 'kept: the image exists');
  assert.ok(storage.volumes.has(`default/${vol!.id}`));
});

test('a failed unpack leaves no image volume behind, the retry unpacks it, and its volume goes with the image', async () => {
  const { db, unpacked, containers, imageVolumes, once } = setup();
  await insertImage(db, 'default', image('fp-gone'));
  const c = await insertContainer(db, 'default', 'img-c', input, { type: 'image', fingerprint: 'fp-gone' }, 'stopped');
  unpacked.push('fail-next');
  await assert.rejects(once(containers, c.id), /simulated failure/);
  assert.deepEqual(await imageVolumeRows('fp-gone'), [], 'no row of a half-unpacked volume');
  assert.equal(
    [...storage.volumes.keys()].some((k) => k.endsWith(c.id)),
    false,
    'no container volume yet',
  );
  await once(containers, c.id);
  assert.deepEqual(unpacked, ['/images/fp-gone']);
  const [vol] = await imageVolumeRows('fp-gone');
  assert.ok(storage.volumes.has(`default/${vol!.id}`));
  await deleteImage(db, 'default', 'fp-gone');
  assert.deepEqual(await imageVolumes.listKeys().then((k) => k.includes(vol!.id)), true);
  await once(imageVolumes, vol!.id);
  assert.deepEqual(await imageVolumeRows('fp-gone'), []);
  assert.equal(storage.volumes.has(`default/${vol!.id}`), false);
  assert.ok(storage.volumes.has(`default/${c.id}`), 'the container cloned from it keeps its own volume');
});
