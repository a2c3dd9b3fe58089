/**
 * The dir and btrfs drivers against the real host: loop files, losetup, mount, btrfs qgroups, rsync.
 * Everything lives under a private /tmp/svcd-storage-it-* root that `after` tears down even on failure.
 */
import assert from 'node:assert/strict';
import { mkdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { createBtrfsDriver } from '../../src/host/storage/btrfs.ts';
import { isSubvolume, readQgroupLimit } from '../../src/host/storage/btrfs-subvolume.ts';
import { createDirDriver, sparePath } from '../../src/host/storage/dir.ts';
import { StorageUnsupportedError } from '../../src/host/storage/errors.ts';
import { findMount, mountAt, readMounts } from '../../src/host/storage/mountinfo.ts';
import type { PoolSpec, SnapshotRef, VolumeRef } from '../../src/host/storage/types.ts';
import { eventually } from '../support/http.ts';
import {
  cleanupTestRoot,
  df,
  exists,
  hostSkipReason,
  loopsFor,
  makeTestRoot,
  mountCount,
  mountsUnder,
  text,
  writeMiB,
} from './storage-fixtures.ts';

const MiB = 1024 * 1024;
const skip = await hostSkipReason();
if (skip) console.log(`# skipping storage driver host tests: ${skip}`);

const btrfs = createBtrfsDriver();
const dir = createDirDriver();
const vol = (id: string): VolumeRef => ({ id, type: 'custom' });
const snap = (v: VolumeRef, id: string): SnapshotRef => ({ volume: v, id });

/** EDQUOT (libuv has no name for it: errno -122 on Linux) or ENOSPC. */
function isQuotaError(e: unknown): boolean {
  const err = e as NodeJS.ErrnoException;
  return err.errno === -os.constants.errno.EDQUOT || err.code === 'EDQUOT' || err.code === 'ENOSPC';
}

/** Roughly equal: within `slack` bytes. */
function near(actual: number, expected: number, slack: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= slack, `${what}: ${actual} vs ${expected} (slack ${slack})`);
}

describe('btrfs driver on a loop file', { skip }, () => {
  let root = '';
  let pool: PoolSpec;
  let file = '';
  let mnt = '';
  const v1 = vol('v1');
  const s1 = snap(v1, 's1');

  before(async () => {
    root = await makeTestRoot();
    pool = { name: 'p1', driver: 'btrfs', config: { size: '300MiB' }, stateDir: path.join(root, 'state') };
    file = path.join(root, 'state', 'disks', 'p1.img');
    mnt = btrfs.poolPath(pool);
  });
  after(() => cleanupTestRoot(root));

  it('creates a sparse loop file, attaches and mounts it', async () => {
    assert.deepEqual(await btrfs.poolHealth(pool), {
      ready: false,
      problem: 'btrfs pool p1 has not been created on this host yet',
    });
    await btrfs.ensurePool(pool);
    assert.equal(mnt, path.join(root, 'state', 'storage-pools', 'p1'));
    const st = await stat(file);
    assert.equal(st.size, 300 * MiB);
    assert.ok(st.blocks * 512 < st.size, 'sparse');
    const loops = await loopsFor(file);
    assert.equal(loops.length, 1);
    const m = mountAt(await readMounts(), mnt);
    assert.equal(m?.fsType, 'btrfs');
    assert.equal(m?.source, loops[0]);
    assert.ok(m?.superOptions.includes('user_subvol_rm_allowed'));
    for (const sub of ['custom', 'custom-snapshots', 'containers', 'images'])
      assert.ok((await stat(path.join(mnt, sub))).isDirectory(), sub);
    assert.deepEqual(await btrfs.poolHealth(pool), { ready: true });
    // The desired-state layer stores the loop file as `source`: still svcd's own loop pool.
    assert.deepEqual(await btrfs.poolHealth({ ...pool, config: { ...pool.config, source: file } }), { ready: true });
  });

  it('reports usage like df', async () => {
    const usage = await btrfs.poolUsage(pool);
    const d = await df(mnt);
    assert.equal(usage.space.total, d.total);
    near(usage.space.used, d.used, 4 * MiB, 'used');
    assert.ok(usage.space.total > 250 * MiB && usage.space.total <= 300 * MiB, `total ${usage.space.total}`);
  });

  it('ensurePool again changes nothing', async () => {
    await btrfs.ensurePool(pool);
    assert.equal((await loopsFor(file)).length, 1);
    assert.equal(await mountCount(mnt), 1);
  });

  it('limits a volume with a qgroup: 10MiB fits in 50MiB, 80MiB does not', async () => {
    await btrfs.ensureVolume(pool, v1, { size: '50MiB' });
    const p = btrfs.volumePath(pool, v1);
    assert.equal(p, path.join(mnt, 'custom', 'v1'));
    assert.ok(await isSubvolume(p));
    assert.equal(await btrfs.volumeExists(pool, v1), true);
    await writeMiB(path.join(p, 'small'), 10);
    try {
      await assert.rejects(writeMiB(path.join(p, 'big'), 80), (e: unknown) => isQuotaError(e));
    } finally {
      await unlink(path.join(p, 'big')).catch(() => undefined);
    }
    await btrfs.ensureVolume(pool, v1, { size: '' });
    assert.equal(await readQgroupLimit(p), undefined, 'limit cleared');
    await btrfs.ensureVolume(pool, v1, { size: '50MiB' });
    assert.equal(await readQgroupLimit(p), 50 * MiB);
  });

  it('snapshots read-only and restores the snapshot content (keeping the limit)', async () => {
    const p = btrfs.volumePath(pool, v1);
    await writeFile(path.join(p, 'data.txt'), 'v1');
    await btrfs.ensureSnapshot(pool, s1);
    await btrfs.ensureSnapshot(pool, s1);
    const sp = btrfs.snapshotPath(pool, s1);
    assert.equal(sp, path.join(mnt, 'custom-snapshots', 'v1', 's1'));
    await assert.rejects(writeFile(path.join(sp, 'x'), 'x'), { code: 'EROFS' });
    await writeFile(path.join(p, 'data.txt'), 'v2');
    await writeFile(path.join(p, 'extra.txt'), 'new');
    await btrfs.restoreSnapshot(pool, s1);
    assert.equal(await text(path.join(p, 'data.txt')), 'v1');
    assert.equal(await exists(path.join(p, 'extra.txt')), false);
    assert.ok(await isSubvolume(p));
    assert.equal(await exists(`${p}.restoring`), false);
    assert.equal(await exists(`${p}.old`), false);
    assert.equal(await readQgroupLimit(p), 50 * MiB, 'size limit carried over');
    await writeFile(path.join(p, 'data.txt'), 'v3');
    await btrfs.restoreSnapshot(pool, s1);
    assert.equal(await text(path.join(p, 'data.txt')), 'v1');
  });

  it('finishes a restore interrupted between its two renames', async () => {
    const p = btrfs.volumePath(pool, v1);
    await writeFile(path.join(p, 'data.txt'), 'v4');
    await runCommand('btrfs', ['subvolume', 'snapshot', btrfs.snapshotPath(pool, s1), `${p}.restoring`]);
    await rename(p, `${p}.old`); // crash here: no volume, a complete .restoring and the old one
    await btrfs.restoreSnapshot(pool, s1);
    assert.equal(await text(path.join(p, 'data.txt')), 'v1');
    assert.equal(await exists(`${p}.old`), false);
    assert.equal(await exists(`${p}.restoring`), false);
  });

  it('copies within the pool as writable snapshots, idempotently, redoing a partial copy', async () => {
    const c1 = vol('c1');
    await btrfs.copyVolume({ pool, driver: btrfs, vol: v1 }, { pool, vol: c1 }, {});
    const cp = btrfs.volumePath(pool, c1);
    assert.ok(await isSubvolume(cp));
    assert.equal(await text(path.join(cp, 'data.txt')), 'v1');
    await writeFile(path.join(cp, 'data.txt'), 'c1');
    await btrfs.copyVolume({ pool, driver: btrfs, vol: v1 }, { pool, vol: c1 }, {});
    assert.equal(await text(path.join(cp, 'data.txt')), 'c1', 'a complete copy is left alone');

    const c2 = vol('c2');
    const c2p = btrfs.volumePath(pool, c2);
    await mkdir(`${c2p}.partial`);
    await writeFile(`${c2p}.partial/junk`, 'x');
    await writeFile(path.join(btrfs.volumePath(pool, v1), 'data.txt'), 'changed');
    await btrfs.copyVolume({ pool, driver: btrfs, vol: v1, snapshot: s1 }, { pool, vol: c2 }, {});
    assert.equal(await text(path.join(c2p, 'data.txt')), 'v1', 'copied from the snapshot');
    assert.equal(await exists(path.join(c2p, 'junk')), false);
    assert.equal(await exists(`${c2p}.partial`), false);
  });

  it('copies to a dir pool and back with rsync', async () => {
    const dpool: PoolSpec = { name: 'd1', driver: 'dir', config: {}, stateDir: path.join(root, 'state') };
    await dir.ensurePool(dpool);
    const d1 = vol('d1');
    await dir.copyVolume(
      { pool, driver: btrfs, vol: v1, snapshot: s1 },
      { pool: dpool, vol: d1 },
      { bwlimit: '500MB' },
    );
    assert.equal(await text(path.join(dir.volumePath(dpool, d1), 'data.txt')), 'v1');
    assert.equal((await stat(path.join(dir.volumePath(dpool, d1), 'small'))).size, 10 * MiB);
    const b1 = vol('b1');
    await writeFile(path.join(dir.volumePath(dpool, d1), 'from-dir'), 'yes');
    await btrfs.copyVolume({ pool: dpool, driver: dir, vol: d1 }, { pool, vol: b1 }, {});
    assert.ok(await isSubvolume(btrfs.volumePath(pool, b1)));
    assert.equal(await text(path.join(btrfs.volumePath(pool, b1), 'from-dir')), 'yes');
    await dir.removePool(dpool);
  });

  it('comes back after a reboot (unmounted and detached behind its back) with data intact', async () => {
    const [dev] = await loopsFor(file);
    assert.ok(dev);
    await runCommand('umount', [mnt]);
    await runCommand('losetup', ['--detach', dev]);
    const health = await btrfs.poolHealth(pool);
    assert.equal(health.ready, false);
    assert.match(health.problem ?? '', /not mounted/);
    await assert.rejects(btrfs.volumeExists(pool, v1), /not mounted/);
    await btrfs.ensurePool(pool);
    assert.deepEqual(await btrfs.poolHealth(pool), { ready: true });
    assert.equal(await text(path.join(btrfs.volumePath(pool, v1), 'data.txt')), 'changed');
    assert.equal(await readQgroupLimit(btrfs.volumePath(pool, v1)), 50 * MiB);
  });

  it('names a missing backing file and refuses to recreate it', async () => {
    const [dev] = await loopsFor(file);
    assert.ok(dev);
    await runCommand('umount', [mnt]);
    await runCommand('losetup', ['--detach', dev]);
    await rename(file, `${file}.moved`);
    try {
      assert.deepEqual(await btrfs.poolHealth(pool), { ready: false, problem: `backing file ${file} is missing` });
      await assert.rejects(
        btrfs.ensurePool(pool),
        (e: unknown) => e instanceof Error && e.message.includes(`backing file ${file} is missing`),
      );
      assert.equal(await exists(file), false, 'no empty file made in its place');
      assert.deepEqual(await loopsFor(file), []);
      assert.deepEqual(await mountsUnder(mnt), []);
    } finally {
      await rename(`${file}.moved`, file);
    }
    await btrfs.ensurePool(pool);
    assert.equal(await text(path.join(btrfs.volumePath(pool, v1), 'data.txt')), 'changed');
  });

  it('grows the pool and refuses to shrink it', async () => {
    const before = (await btrfs.poolUsage(pool)).space.total;
    const bigger = { ...pool, config: { size: '400MiB' } };
    await btrfs.resizePool?.(bigger);
    assert.equal((await stat(file)).size, 400 * MiB);
    const after = (await btrfs.poolUsage(pool)).space.total;
    assert.ok(after > before + 90 * MiB, `${before} → ${after}`);
    await btrfs.resizePool?.(bigger); // idempotent
    await assert.rejects(
      btrfs.resizePool?.({ ...pool, config: { size: '200MiB' } }) ?? Promise.resolve(),
      /refusing to shrink from 400MiB to 200MiB/,
    );
  });

  it('removes volumes, snapshots and the pool without leaving a mount, loop device or file', async () => {
    await btrfs.removeSnapshot(pool, s1);
    await btrfs.removeSnapshot(pool, s1);
    assert.equal(await exists(path.join(mnt, 'custom-snapshots', 'v1')), false);
    const vp = btrfs.volumePath(pool, v1);
    await mkdir(path.join(vp, 'deep'));
    await runCommand('btrfs', ['subvolume', 'create', path.join(vp, 'deep', 'nested')]);
    await runCommand('btrfs', ['subvolume', 'create', path.join(vp, 'deep', 'nested', 'inner')]);
    await btrfs.removeVolume(pool, v1);
    assert.equal(await btrfs.volumeExists(pool, v1), false, 'deleted with its nested subvolumes');
    assert.equal(await exists(vp), false);
    await btrfs.removePool(pool);
    assert.deepEqual(await mountsUnder(mnt), []);
    assert.deepEqual(await loopsFor(file), []);
    assert.equal(await exists(file), false);
    assert.equal(await exists(mnt), false);
    await btrfs.removePool(pool); // absent is success
  });

  it('a failing ensurePool leaves nothing behind (mkfs fails, mount fails)', async () => {
    const stateDir = path.join(root, 'state2');
    const tiny: PoolSpec = { name: 'tiny', driver: 'btrfs', config: { size: '1MiB' }, stateDir };
    await assert.rejects(btrfs.ensurePool(tiny), /mkfs\.btrfs/);
    assert.equal(await exists(stateDir), false, 'no state dir, disks dir, file or mount point');
    assert.deepEqual(await loopsFor(path.join(stateDir, 'disks', 'tiny.img')), []);

    const badOpts: PoolSpec = {
      name: 'bad',
      driver: 'btrfs',
      config: { size: '300MiB', 'btrfs.mount_options': 'no_such_option_xyz' },
      stateDir,
    };
    await assert.rejects(btrfs.ensurePool(badOpts), /mount/);
    assert.deepEqual(await loopsFor(path.join(stateDir, 'disks', 'bad.img')), [], 'loop device detached again');
    assert.deepEqual(await mountsUnder(stateDir), []);
    assert.equal(await exists(stateDir), false);
  });
});

describe('dir driver', { skip }, () => {
  let root = '';
  let pool: PoolSpec;
  const v1 = vol('v1');
  const s1 = snap(v1, 's1');

  before(async () => {
    root = await makeTestRoot();
    pool = { name: 'd', driver: 'dir', config: {}, stateDir: path.join(root, 'state') };
  });
  after(() => cleanupTestRoot(root));

  it('creates the pool directory and its subdirectories (0711), idempotently', async () => {
    const p = dir.poolPath(pool);
    assert.equal(p, path.join(root, 'state', 'storage-pools', 'd'));
    assert.deepEqual(await dir.poolHealth(pool), { ready: false, problem: `directory ${p} is missing` });
    await dir.ensurePool(pool);
    await dir.ensurePool(pool);
    assert.equal((await stat(p)).mode & 0o777, 0o711);
    for (const sub of ['custom', 'custom-snapshots', 'containers', 'images'])
      assert.equal((await stat(path.join(p, sub))).mode & 0o777, 0o711, sub);
    assert.deepEqual(await dir.poolHealth(pool), { ready: true });
    const usage = await dir.poolUsage(pool);
    const d = await df(p);
    assert.equal(usage.space.total, d.total);
    near(usage.space.used, d.used, 64 * MiB, 'used');
    assert.ok(usage.inodes.total > 0);
  });

  it('volume, snapshot, restore and copy', async () => {
    await dir.ensureVolume(pool, v1, {});
    const p = dir.volumePath(pool, v1);
    await writeFile(path.join(p, 'data.txt'), 'v1');
    await mkdir(path.join(p, 'sub'));
    await writeFile(path.join(p, 'sub', 'nested'), 'n');
    await dir.ensureSnapshot(pool, s1);
    await writeFile(path.join(p, 'data.txt'), 'v2');
    await writeFile(path.join(p, 'extra.txt'), 'x');
    assert.equal(await text(path.join(dir.snapshotPath(pool, s1), 'data.txt')), 'v1');
    await dir.restoreSnapshot(pool, s1);
    assert.equal(await text(path.join(p, 'data.txt')), 'v1');
    assert.equal(await text(path.join(p, 'sub', 'nested')), 'n');
    assert.equal(await exists(path.join(p, 'extra.txt')), false);

    const c1 = vol('c1');
    const cp = dir.volumePath(pool, c1);
    await mkdir(`${cp}.partial`);
    await writeFile(`${cp}.partial/junk`, 'x');
    await dir.copyVolume({ pool, driver: dir, vol: v1 }, { pool, vol: c1 }, {});
    assert.equal(await text(path.join(cp, 'data.txt')), 'v1');
    assert.equal(await exists(path.join(cp, 'junk')), false);
    assert.equal(await exists(`${cp}.partial`), false);
    await writeFile(path.join(cp, 'data.txt'), 'mine');
    await dir.copyVolume({ pool, driver: dir, vol: v1 }, { pool, vol: c1 }, {});
    assert.equal(await text(path.join(cp, 'data.txt')), 'mine', 'a complete copy is left alone');
  });

  it('containers from an image take a spare copy made in the background; each is a full, separate copy', async () => {
    const img: VolumeRef = { id: 'img1', type: 'image' };
    await dir.ensureVolume(pool, img, {});
    const ip = dir.volumePath(pool, img);
    await mkdir(path.join(ip, 'rootfs', 'etc'), { recursive: true });
    await writeFile(path.join(ip, 'rootfs', 'etc', 'hostname'), 'image\n');
    const spare = sparePath(ip);
    const ct = (n: number): VolumeRef => ({ id: `sp${n}`, type: 'container' });
    // the first copies itself and leaves a spare behind
    await dir.copyVolume({ pool, driver: dir, vol: img }, { pool, vol: ct(1) }, {});
    await eventually(() => exists(spare), 'a spare copy of the image volume');
    const spareIno = (await stat(spare)).ino;
    // the next one is that spare, moved into place; another spare follows
    await dir.copyVolume({ pool, driver: dir, vol: img }, { pool, vol: ct(2) }, {});
    assert.equal((await stat(dir.volumePath(pool, ct(2)))).ino, spareIno, 'the spare was taken');
    await eventually(() => exists(spare), 'a new spare');
    // concurrent copies: all complete, none shares anything with another or with the image
    await Promise.all(
      [3, 4, 5, 6].map((n) => dir.copyVolume({ pool, driver: dir, vol: img }, { pool, vol: ct(n) }, {})),
    );
    for (const n of [1, 2, 3, 4, 5, 6]) {
      const f = path.join(dir.volumePath(pool, ct(n)), 'rootfs', 'etc', 'hostname');
      assert.equal(await text(f), 'image\n', `copy ${n}`);
      await writeFile(f, `c${n}\n`);
    }
    assert.equal(await text(path.join(ip, 'rootfs', 'etc', 'hostname')), 'image\n', 'the image volume is untouched');
    assert.equal(await text(path.join(dir.volumePath(pool, ct(3)), 'rootfs', 'etc', 'hostname')), 'c3\n');
    // removing the image volume removes its spare (after a refill under way)
    await dir.removeVolume(pool, img);
    assert.equal(await exists(spare), false);
    assert.equal(await exists(`${spare}.partial`), false);
    for (const n of [1, 2, 3, 4, 5, 6]) await dir.removeVolume(pool, ct(n));
  });

  it('refuses size without project quotas, naming the filesystem', async () => {
    const m = findMount(await readMounts(), dir.poolPath(pool));
    assert.ok(m);
    const v2 = vol('v2');
    await assert.rejects(dir.ensureVolume(pool, v2, { size: '50MiB' }), (e: unknown) => {
      assert.ok(e instanceof StorageUnsupportedError);
      if (m.fsType === 'ext4')
        assert.equal(
          e.message,
          `size needs project quotas: the filesystem at ${m.mountPoint} (ext4) is not mounted with prjquota`,
        );
      else assert.match(e.message, new RegExp(`^size needs project quotas: the filesystem at \\S+ \\(${m.fsType}\\)`));
      return true;
    });
    assert.equal(await dir.volumeExists(pool, v2), false, 'nothing created');
  });

  it('removes snapshots, volumes and the default pool directory', async () => {
    await dir.removeSnapshot(pool, s1);
    await dir.removeVolume(pool, v1);
    await dir.removeVolume(pool, v1);
    assert.equal(await dir.volumeExists(pool, v1), false);
    await dir.removePool(pool);
    assert.equal(await exists(dir.poolPath(pool)), false);
  });

  it('with a user source, removes only its own subdirectories (and only when empty)', async () => {
    const src = path.join(root, 'mine');
    await mkdir(src);
    await writeFile(path.join(src, 'keep.txt'), 'user data');
    const upool: PoolSpec = { name: 'u', driver: 'dir', config: { source: src }, stateDir: path.join(root, 'state') };
    assert.equal(dir.poolPath(upool), src);
    await dir.ensurePool(upool);
    await dir.ensureVolume(upool, v1, {});
    await assert.rejects(dir.removePool(upool), /still holds 1 volume/);
    await dir.removeVolume(upool, v1);
    await dir.removePool(upool);
    assert.equal(await text(path.join(src, 'keep.txt')), 'user data');
    for (const sub of ['custom', 'custom-snapshots', 'containers', 'images'])
      assert.equal(await exists(path.join(src, sub)), false, sub);
  });
});
