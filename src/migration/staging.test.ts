import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { PoolSpec } from '../host/storage/types.ts';
import { createSimStorage } from '../test-support/sim-storage.ts';
import { createStaging, STAGING_KIND } from './staging.ts';

const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-staging-'));
after(() => rm(root, { recursive: true, force: true }));

const storage = createSimStorage({ root: path.join(root, 'pools') });
const spec: PoolSpec = { name: 'p', driver: 'btrfs', config: {}, stateDir: root };
await storage.ensurePool(spec);
const pools = async () => ({ spec, driver: storage as typeof storage });
const marks = () => readdir(path.join(root, 'migrations')).catch(() => [] as string[]);

test("a source's send snapshot: held under a mark, released, or swept after a crash", async () => {
  const staging = createStaging({ stateDir: root, pools });
  const vol = { id: 'c1', type: 'container' as const };
  await storage.ensureVolume(spec, vol, {});
  const held = await staging.hold('p', vol);
  assert.equal(storage.snapshots.size, 1);
  assert.equal((await marks()).length, 1);
  await held.release();
  assert.equal(storage.snapshots.size, 0);
  assert.deepEqual(await marks(), []);

  // a crash while holding: the next start's sweep removes it, whatever rows say
  await staging.hold('p', vol);
  const swept = await createStaging({ stateDir: root, pools }).sweep(async () => true);
  assert.equal(swept, 1);
  assert.equal(storage.snapshots.size, 0);
  assert.deepEqual(await marks(), []);
  assert.ok(storage.volumes.has('p/c1'), 'the volume itself is untouched');
});

test('a volume staged for streams is not made up front; without the pool’s support it is refused', async () => {
  const staging = createStaging({ stateDir: root, pools });
  await assert.rejects(
    staging.begin({ kind: STAGING_KIND.container, id: 'r1', pool: 'p' }, { streams: true }),
    /cannot receive subvolume streams/,
  );
  assert.deepEqual(await marks(), []);
  assert.equal(storage.volumes.has('p/r1'), false);
});
