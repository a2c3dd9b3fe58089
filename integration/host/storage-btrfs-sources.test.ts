/**
 * btrfs pools on a user's `source` against the real host: a block device (a loop device this test
 * attaches itself), a directory (subvolume) on an existing btrfs mount, and the sources it must refuse.
 * Everything lives under a private /tmp/svcd-storage-it-* root that `after` tears down even on failure.
 */
import assert from 'node:assert/strict';
import { mkdir, open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { filesystemType } from '../../src/host/storage/blkid.ts';
import { createBtrfsDriver } from '../../src/host/storage/btrfs.ts';
import { isSubvolume, readQgroupLimit } from '../../src/host/storage/btrfs-subvolume.ts';
import { attachLoop } from '../../src/host/storage/loop.ts';
import { mountAt, readMounts } from '../../src/host/storage/mountinfo.ts';
import type { PoolSpec, VolumeRef } from '../../src/host/storage/types.ts';
import {
  cleanupTestRoot,
  exists,
  hostSkipReason,
  loopsFor,
  makeTestRoot,
  mountsUnder,
  text,
} from './storage-fixtures.ts';

const MiB = 1024 * 1024;
const skip = await hostSkipReason();
if (skip) console.log(`# skipping btrfs source host tests: ${skip}`);

const btrfs = createBtrfsDriver();
const v1: VolumeRef = { id: 'v1', type: 'custom' };

/** A sparse file of `mib` MiB under the test root, attached to a loop device by the test itself. */
async function testDevice(root: string, name: string, mib: number): Promise<string> {
  const file = path.join(root, `${name}.img`);
  const fh = await open(file, 'wx');
  await fh.truncate(mib * MiB);
  await fh.close();
  return attachLoop(file);
}

describe('btrfs driver on a user source', { skip }, () => {
  let root = '';
  let stateDir = '';

  before(async () => {
    root = await makeTestRoot();
    stateDir = path.join(root, 'state');
  });
  after(() => cleanupTestRoot(root));

  it('formats a blank block device, mounts it, and leaves the device and its data on removal', async () => {
    const dev = await testDevice(root, 'blank', 200);
    const pool: PoolSpec = { name: 'dev', driver: 'btrfs', config: { source: dev }, stateDir };
    const mnt = btrfs.poolPath(pool);
    await btrfs.ensurePool(pool);
    assert.equal(await filesystemType(dev), 'btrfs');
    assert.equal(mountAt(await readMounts(), mnt)?.source, dev);
    assert.deepEqual(await btrfs.poolHealth(pool), { ready: true });
    await btrfs.ensureVolume(pool, v1, { size: '20MiB' });
    await writeFile(path.join(btrfs.volumePath(pool, v1), 'f'), 'on the device');
    await btrfs.ensurePool(pool);

    await btrfs.removePool(pool);
    assert.deepEqual(await mountsUnder(mnt), []);
    assert.equal(await exists(mnt), false);
    assert.deepEqual(await loopsFor(path.join(root, 'blank.img')), [dev], 'the user device stays attached');

    await btrfs.ensurePool(pool); // an existing btrfs is reused, not reformatted
    assert.equal(await text(path.join(btrfs.volumePath(pool, v1), 'f')), 'on the device');
    await btrfs.removeVolume(pool, v1);
    await btrfs.removePool(pool);
  });

  it('refuses a block device holding another filesystem, leaving nothing behind', async () => {
    const dev = await testDevice(root, 'ext4', 32);
    await runCommand('mkfs.ext4', ['-q', dev]);
    const pool: PoolSpec = { name: 'ext', driver: 'btrfs', config: { source: dev }, stateDir };
    await assert.rejects(
      btrfs.ensurePool(pool),
      new RegExp(`refusing to use ${dev}: it already holds a ext4 filesystem`),
    );
    assert.equal(await filesystemType(dev), 'ext4', 'not formatted');
    assert.equal(await exists(btrfs.poolPath(pool)), false);
    assert.equal((await btrfs.poolHealth(pool)).ready, false);
  });

  it('bind-mounts a subvolume of an existing btrfs mount; removal keeps the user data', async () => {
    const dev = await testDevice(root, 'host', 200);
    await runCommand('mkfs.btrfs', ['-q', dev]);
    const hostMnt = path.join(root, 'hostfs');
    await mkdir(hostMnt);
    await runCommand('mount', [dev, hostMnt]);
    const sub = path.join(hostMnt, 'sub');
    await runCommand('btrfs', ['subvolume', 'create', sub]);
    await writeFile(path.join(sub, 'keep.txt'), 'user data');

    const pool: PoolSpec = { name: 'bind', driver: 'btrfs', config: { source: sub }, stateDir };
    const mnt = btrfs.poolPath(pool);
    await btrfs.ensurePool(pool);
    const m = mountAt(await readMounts(), mnt);
    assert.equal(m?.fsType, 'btrfs');
    assert.equal(m?.root, '/sub');
    assert.equal(await text(path.join(mnt, 'keep.txt')), 'user data');
    await btrfs.ensurePool(pool);
    assert.equal((await mountsUnder(mnt)).length, 1);

    await btrfs.ensureVolume(pool, v1, { size: '30MiB' });
    assert.ok(await isSubvolume(path.join(sub, 'custom', 'v1')), 'the volume lives in the user subvolume');
    assert.equal(await readQgroupLimit(btrfs.volumePath(pool, v1)), 30 * MiB);
    await btrfs.removeVolume(pool, v1);
    await btrfs.removePool(pool);
    assert.deepEqual(await mountsUnder(mnt), []);
    assert.equal(await exists(mnt), false);
    assert.equal(await text(path.join(sub, 'keep.txt')), 'user data');
    for (const d of ['custom', 'custom-snapshots', 'containers', 'images'])
      assert.equal(await exists(path.join(sub, d)), false, d);
  });

  it('refuses a directory that is not on btrfs, a plain file, and a missing path', async () => {
    const plain = path.join(root, 'plain');
    await mkdir(plain);
    await assert.rejects(
      btrfs.ensurePool({ name: 'a', driver: 'btrfs', config: { source: plain }, stateDir }),
      /is a directory on \S+, not on a btrfs filesystem/,
    );
    const file = path.join(root, 'file.bin');
    await writeFile(file, 'x');
    await assert.rejects(
      btrfs.ensurePool({ name: 'b', driver: 'btrfs', config: { source: file }, stateDir }),
      /is neither a block device nor a directory on a btrfs filesystem/,
    );
    await assert.rejects(
      btrfs.ensurePool({ name: 'c', driver: 'btrfs', config: { source: path.join(root, 'nope') }, stateDir }),
      /does not exist/,
    );
    assert.deepEqual(
      await btrfs.poolHealth({ name: 'c', driver: 'btrfs', config: { source: path.join(root, 'nope') }, stateDir }),
      {
        ready: false,
        problem: `source ${path.join(root, 'nope')} is missing`,
      },
    );
    for (const name of ['a', 'b', 'c'])
      assert.equal(await exists(path.join(stateDir, 'storage-pools', name)), false, name);
  });
});
