/**
 * The `btrfs` driver: volumes are subvolumes (size = qgroup referenced limit), snapshots are read-only
 * subvolume snapshots, copies within a pool are writable snapshots, copies from elsewhere are rsync'd into a
 * new subvolume. Every volume operation first checks the pool is mounted, so nothing is ever written into
 * (or "found absent" in) the bare mount-point directory.
 */
import { rename, stat } from 'node:fs/promises';
import {
  deleteSubvolumeTree,
  createSubvolume,
  isSubvolume,
  readQgroupLimit,
  setQgroupLimit,
  setReadOnly,
  setReceivedWritable,
  snapshotSubvolume,
} from './btrfs-subvolume.ts';
import {
  btrfsPoolHealth,
  btrfsPoolPath,
  ensureBtrfsPool,
  remountBtrfsPool,
  removeBtrfsPool,
  requireMounted,
  resizeBtrfsPool,
} from './btrfs-pool.ts';
import { buildAtomically, partialPath, syncTree } from './copy-tree.ts';
import { makeDirs, pathExists, removeEmptyDir } from './fs-helpers.ts';
import { snapshotParentIn, snapshotPathIn, volumePathIn } from './pool-layout.ts';
import { statfsUsage } from './statfs-usage.ts';
import type { PoolSpec, SnapshotRef, StorageDriver } from './types.ts';
import { parseOptionalSize } from '../../util/size.ts';

export function restoringPath(volumePath: string): string {
  return `${volumePath}.restoring`;
}

export function replacedPath(volumePath: string): string {
  return `${volumePath}.old`;
}

/** Where a migration's subvolume streams land before they become the volume and its snapshots. */
export function landingPath(volumePath: string): string {
  return `${volumePath}.receiving`;
}

/** The btrfs driver takes no options today; the object keeps the factory signature uniform. */
export type BtrfsDriverOptions = Record<string, never>;

export function createBtrfsDriver(_opts: BtrfsDriverOptions = {}): StorageDriver {
  const volumePath = (pool: PoolSpec, vol: { id: string; type: 'custom' | 'container' | 'image' }) =>
    volumePathIn(btrfsPoolPath(pool), vol);
  const snapshotPath = (pool: PoolSpec, snap: SnapshotRef) => snapshotPathIn(btrfsPoolPath(pool), snap);

  const driver: StorageDriver = {
    name: 'btrfs',
    poolPath: btrfsPoolPath,
    ensurePool: ensureBtrfsPool,
    removePool: removeBtrfsPool,
    poolHealth: btrfsPoolHealth,
    resizePool: resizeBtrfsPool,
    remountPool: remountBtrfsPool,
    poolUsage: async (pool) => statfsUsage(await requireMounted(pool)),

    volumePath,

    async ensureVolume(pool, vol, { size }, signal) {
      const bytes = parseOptionalSize(size);
      await requireMounted(pool);
      const p = volumePath(pool, vol);
      if (!(await isSubvolume(p))) {
        if (await pathExists(p)) throw new Error(`${p} exists but is not a btrfs subvolume; not touching it`);
        await createSubvolume(p, signal);
      }
      await setQgroupLimit(p, bytes, signal);
    },

    async removeVolume(pool, vol, signal) {
      await requireMounted(pool);
      const p = volumePath(pool, vol);
      for (const q of [p, partialPath(p), restoringPath(p), replacedPath(p), landingPath(p)])
        await deleteSubvolumeTree(q, signal);
      await removeEmptyDir(snapshotParentIn(btrfsPoolPath(pool), vol));
    },

    async snapshotExists(pool, snap) {
      return stat(snapshotPath(pool, snap)).then(
        () => true,
        () => false,
      );
    },

    async volumeExists(pool, vol) {
      await requireMounted(pool);
      return isSubvolume(volumePath(pool, vol));
    },

    async copyVolume(src, dst, { bwlimit }, signal) {
      await requireMounted(dst.pool);
      const from = src.snapshot
        ? src.driver.snapshotPath(src.pool, src.snapshot)
        : src.driver.volumePath(src.pool, src.vol);
      if (!(await pathExists(from))) throw new Error(`cannot copy ${from}: it does not exist`);
      const samePool =
        src.driver.name === 'btrfs' && src.pool.name === dst.pool.name && src.pool.stateDir === dst.pool.stateDir;
      const limit = bwlimit || dst.pool.config['rsync.bwlimit'] || src.pool.config['rsync.bwlimit'];
      await buildAtomically({
        dst: volumePath(dst.pool, dst.vol),
        remove: (p) => deleteSubvolumeTree(p), // no signal: cleanup after a cancel must still run
        create: samePool ? (p) => snapshotSubvolume(from, p, false, signal) : (p) => createSubvolume(p, signal),
        fill: samePool ? async () => undefined : (p) => syncTree({ src: from, dst: p, bwlimit: limit, signal }),
      });
    },

    snapshotPath,

    async ensureSnapshot(pool, snap, signal) {
      await requireMounted(pool);
      const vol = volumePath(pool, snap.volume);
      if (!(await isSubvolume(vol))) throw new Error(`cannot snapshot ${vol}: it is not a btrfs subvolume`);
      const p = snapshotPath(pool, snap);
      if (await pathExists(p)) return; // a snapshot is created atomically: present means complete
      await makeDirs(snapshotParentIn(btrfsPoolPath(pool), snap.volume), 0o711);
      await snapshotSubvolume(vol, p, true, signal);
    },

    async removeSnapshot(pool, snap, signal) {
      await requireMounted(pool);
      await deleteSubvolumeTree(snapshotPath(pool, snap), signal);
      await removeEmptyDir(snapshotParentIn(btrfsPoolPath(pool), snap.volume));
    },

    /**
     * Snapshot (rw) the snapshot to `<vol>.restoring`, carry the volume's qgroup limit over, then swap by
     * renames (`<vol>` → `<vol>.old`, `.restoring` → `<vol>`) and delete the old subvolume. Rerunning after a
     * crash at any point converges: a half-done swap is completed first, leftovers are deleted, and the
     * restore is redone.
     */
    async restoreSnapshot(pool, snap, signal) {
      await requireMounted(pool);
      const from = snapshotPath(pool, snap);
      if (!(await pathExists(from))) throw new Error(`cannot restore: snapshot ${from} does not exist`);
      const vol = volumePath(pool, snap.volume);
      const restoring = restoringPath(vol);
      const old = replacedPath(vol);
      if (!(await pathExists(vol)) && (await pathExists(restoring))) await rename(restoring, vol);
      await deleteSubvolumeTree(old, signal);
      await deleteSubvolumeTree(restoring, signal);
      const limit = (await pathExists(vol)) ? await readQgroupLimit(vol, signal) : undefined;
      await snapshotSubvolume(from, restoring, false, signal);
      if (typeof limit === 'number') await setQgroupLimit(restoring, limit, signal);
      if (await pathExists(vol)) await rename(vol, old);
      await rename(restoring, vol);
      await deleteSubvolumeTree(old, signal);
    },

    subvolumeStreams: {
      landingPath: (pool, vol) => landingPath(volumePath(pool, vol)),

      async adoptSnapshot(pool, snap, from, edit, signal) {
        await requireMounted(pool);
        const p = snapshotPath(pool, snap);
        await deleteSubvolumeTree(p, signal);
        await makeDirs(snapshotParentIn(btrfsPoolPath(pool), snap.volume), 0o711);
        if (!edit) return snapshotSubvolume(from, p, true, signal);
        await snapshotSubvolume(from, p, false, signal);
        await edit(p);
        await setReadOnly(p, signal);
      },

      // The received subvolume is moved into place, as LXD's sink does, not snapshotted: a snapshot would
      // first wait for all its data to be written out, then leave the received one to delete. (A read-only
      // subvolume cannot move to another directory: it is made writable first.)
      async adoptVolume(pool, vol, from, signal) {
        await requireMounted(pool);
        const p = volumePath(pool, vol);
        await deleteSubvolumeTree(p, signal);
        await setReceivedWritable(from, signal);
        await rename(from, p);
        await deleteSubvolumeTree(landingPath(p), signal);
      },
    },
  };
  return driver;
}
