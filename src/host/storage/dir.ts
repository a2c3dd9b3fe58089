/**
 * The `dir` driver: a pool is a directory (default `<stateDir>/storage-pools/<name>`, or the user's
 * `source`), volumes are subdirectories, snapshots and copies are full copies (cp --reflink=auto / rsync)
 * built in `<dst>.partial` and renamed into place. `size` needs project quotas (xfs/ext4 prjquota).
 *
 * A container created from an image takes a spare copy of the image volume (`<image volume>.spare`, made
 * in the background after each such create) by a rename, so its create does not wait for a copy. The
 * spare costs the disk space of one more copy of each image used on the pool; it goes with the image volume.
 */
import { chmod, mkdir, readdir, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { buildAtomically, cloneTree, partialPath, syncTree } from './copy-tree.ts';
import { StorageUnsupportedError } from './errors.ts';
import {
  isErrno,
  makeDirs,
  pathExists,
  removeEmptyDir,
  removeMadeDirs,
  removeTree,
  statOrUndefined,
} from './fs-helpers.ts';
import { OWN_SUBDIRS, POOL_SUBDIRS, snapshotParentIn, snapshotPathIn, volumePathIn } from './pool-layout.ts';
import { applyProjectQuota, probeProjectQuota } from './project-quota.ts';
import type { ProjectQuotaSupport } from './project-quota.ts';
import { statfsUsage } from './statfs-usage.ts';
import type { PoolSpec, StorageDriver, VolumeRef } from './types.ts';
import { withUndo } from './undo-stack.ts';
import { createTrash, trashDirOf, type Trash } from './trash.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import { defaultPoolPath } from '../layout.ts';
import { parseOptionalSize } from '../../util/size.ts';

/** Can a dir pool's volumes have `size` here? (`{ ok: false, reason }` says why not.) */
export { probeProjectQuota } from './project-quota.ts';
export type { ProjectQuotaSupport } from './project-quota.ts';

export interface DirDriverOptions {
  /** How to tell whether `size` can be enforced under a path (default: mountinfo). */
  probeQuota?: (p: string) => Promise<ProjectQuotaSupport>;
  /** Where removed volumes go before they are removed in the background (default: a trash of its own). */
  trash?: Trash;
}

const DIR_MODE = 0o711;

/** The ready copy of an image volume that the next container created from it takes. */
export const sparePath = (imageVolume: string) => `${imageVolume}.spare`;

/** The user's own directory, or undefined when the pool uses svcd's default one (absent source, or source = the default path). */
function userSource(pool: PoolSpec): string | undefined {
  const source = pool.config.source?.trim();
  if (!source) return undefined;
  if (!path.isAbsolute(source))
    throw new Error(`dir pool ${pool.name}: source ${JSON.stringify(source)} must be an absolute path`);
  const resolved = path.resolve(source);
  return resolved === path.resolve(defaultPoolPath(pool.stateDir, pool.name)) ? undefined : resolved;
}

/** mkdir one level (the parent must exist); returns whether it was created. */
async function mkdirOne(p: string): Promise<boolean> {
  try {
    await mkdir(p, { mode: DIR_MODE });
  } catch (e) {
    if (isErrno(e, 'EEXIST')) return false;
    throw e;
  }
  await chmod(p, DIR_MODE);
  return true;
}

/** Remove one of svcd's subdirectories of a user-given source: leftovers of interrupted copies go, volumes make it refuse. */
async function removeOwnSubdir(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((e: unknown) => {
    if (isErrno(e, 'ENOENT')) return undefined;
    throw e;
  });
  if (!entries) return;
  for (const entry of entries) {
    const p = path.join(dir, entry.name);
    if (entry.name.endsWith('.partial') || entry.name.endsWith('.spare')) await removeTree(p);
    else if (entry.isDirectory() && dir.endsWith('-snapshots')) await removeEmptyDir(p);
  }
  if (!(await removeEmptyDir(dir)) && (await pathExists(dir))) {
    const left = await readdir(dir);
    throw new Error(`cannot remove ${dir}: it still holds ${left.length} volume(s) (${left.slice(0, 5).join(', ')})`);
  }
}

export function createDirDriver(opts: DirDriverOptions = {}): StorageDriver {
  const probeQuota = opts.probeQuota ?? probeProjectQuota;
  const trash = opts.trash ?? createTrash();
  const poolPath = (pool: PoolSpec) => userSource(pool) ?? defaultPoolPath(pool.stateDir, pool.name);
  /** Spare copies are made, taken and removed one at a time per image volume. */
  const spares = createKeyedMutex();
  /** Make the image volume's spare copy again in the background, unless that is already under way. */
  function refillSpare(imageVolume: string): void {
    if (spares.busy(imageVolume)) return;
    const build = () =>
      buildAtomically({
        dst: sparePath(imageVolume),
        create: (p) => mkdirOne(p).then(() => undefined),
        remove: removeTree,
        fill: (p) => cloneTree({ src: imageVolume, dst: p, background: true }),
      });
    // Nobody waits for it: a failed spare only means the next create copies on its own.
    spares.run(imageVolume, build).catch(() => undefined);
  }
  /** Image volumes whose spare, being made, is already promised to a waiting create. */
  const claimed = new Set<string>();
  /**
   * Move the spare copy of `imageVolume` to `dst` (absent); false when there is none. A spare being made
   * is waited for by one create (it started earlier, so it is ready sooner than a new copy); any other
   * create meanwhile copies on its own.
   */
  const takeSpare = async (imageVolume: string, dst: string): Promise<boolean> => {
    const waits = spares.busy(imageVolume);
    if (waits) {
      if (claimed.has(imageVolume)) return false;
      claimed.add(imageVolume);
    }
    try {
      return await spares.run(imageVolume, () =>
        rename(sparePath(imageVolume), dst).then(
          () => true,
          (e: unknown) => (isErrno(e, 'ENOENT') ? false : Promise.reject(e)),
        ),
      );
    } finally {
      if (waits) claimed.delete(imageVolume);
    }
  };

  const driver: StorageDriver = {
    name: 'dir',
    poolPath,

    async ensurePool(pool) {
      const root = poolPath(pool);
      const st = await statOrUndefined(root);
      if (st && !st.isDirectory()) throw new Error(`dir pool ${pool.name}: ${root} exists and is not a directory`);
      await withUndo(async (undo) => {
        const made = await makeDirs(root, DIR_MODE);
        undo.push(`remove ${root}`, () => removeMadeDirs(made));
        for (const sub of POOL_SUBDIRS) {
          const p = path.join(root, sub);
          if (await mkdirOne(p)) undo.push(`remove ${p}`, () => removeEmptyDir(p).then(() => undefined));
        }
      });
      // What removed volumes left in the trash (a crash before their background removal): gone in the background.
      trash.sweep(trashDirOf(root)).catch(() => undefined);
    },

    async removePool(pool) {
      const root = poolPath(pool);
      if (!userSource(pool)) return removeTree(root);
      await trash.sweep(trashDirOf(root));
      await removeEmptyDir(trashDirOf(root));
      for (const sub of OWN_SUBDIRS) await removeOwnSubdir(path.join(root, sub));
    },

    async poolHealth(pool) {
      const root = poolPath(pool);
      const st = await statOrUndefined(root);
      if (!st) return { ready: false, problem: `directory ${root} is missing` };
      if (!st.isDirectory()) return { ready: false, problem: `${root} is not a directory` };
      for (const sub of POOL_SUBDIRS) {
        if (!(await statOrUndefined(path.join(root, sub)))?.isDirectory())
          return { ready: false, problem: `directory ${path.join(root, sub)} is missing` };
      }
      return { ready: true };
    },

    poolUsage: (pool) => statfsUsage(poolPath(pool)),

    volumePath: (pool, vol) => volumePathIn(poolPath(pool), vol),

    async ensureVolume(pool, vol, { size }, signal) {
      const bytes = parseOptionalSize(size);
      const root = poolPath(pool);
      const support = await probeQuota(root);
      if (bytes !== undefined && !support.ok) throw new StorageUnsupportedError(support.reason);
      const p = driver.volumePath(pool, vol);
      await mkdirOne(p);
      if (!support.ok) return;
      const apply = applyProjectQuota({ dir: p, volumeId: vol.id, bytes, mountPoint: support.mountPoint }, signal);
      // Clearing a limit that may never have been set is best effort (quota tools may be absent).
      await (bytes === undefined ? apply.catch(() => undefined) : apply);
    },

    async removeVolume(pool, vol) {
      const p = driver.volumePath(pool, vol);
      if (vol.type === 'image')
        await spares.run(p, () => removeTree(sparePath(p)).then(() => removeTree(partialPath(sparePath(p)))));
      // A rename into the pool's trash: the volume is gone at once, its files go in the background. What
      // else it may have left (a partial copy, its snapshots' empty parent) goes meanwhile.
      await Promise.all([
        trash.discard(p, trashDirOf(poolPath(pool))),
        removeTree(partialPath(p)),
        removeEmptyDir(snapshotParentIn(poolPath(pool), vol)),
      ]);
    },

    async snapshotExists(pool, snap) {
      return stat(driver.snapshotPath(pool, snap)).then(
        () => true,
        () => false,
      );
    },

    async volumeExists(pool, vol) {
      return (await statOrUndefined(driver.volumePath(pool, vol)))?.isDirectory() ?? false;
    },

    async copyVolume(src, dst, { bwlimit }, signal) {
      const from = src.snapshot
        ? src.driver.snapshotPath(src.pool, src.snapshot)
        : src.driver.volumePath(src.pool, src.vol);
      if (!(await pathExists(from))) throw new Error(`cannot copy ${from}: it does not exist`);
      const limit = bwlimit || dst.pool.config['rsync.bwlimit'] || src.pool.config['rsync.bwlimit'];
      const to = driver.volumePath(dst.pool, dst.vol);
      if (
        src.vol.type === 'image' &&
        !src.snapshot &&
        src.driver === driver &&
        !limit &&
        poolPath(src.pool) === poolPath(dst.pool) &&
        !(await pathExists(to))
      ) {
        const took = await takeSpare(from, to);
        refillSpare(from);
        if (took) return;
      }
      await buildAtomically({
        dst: driver.volumePath(dst.pool, dst.vol),
        create: (p) => mkdirOne(p).then(() => undefined),
        remove: removeTree,
        // Into a new, empty directory: cp (reflinks where the fs has them) is ~40% faster than rsync;
        // rsync only when its bandwidth limit is asked for.
        fill: (p) =>
          limit && limit.trim() !== '' && limit.trim() !== '0'
            ? syncTree({ src: from, dst: p, bwlimit: limit, signal })
            : cloneTree({ src: from, dst: p, signal }),
      });
    },

    snapshotPath: (pool, snap) => snapshotPathIn(poolPath(pool), snap),

    async ensureSnapshot(pool, snap, signal) {
      const vol = await existingVolume(pool, snap.volume);
      await makeDirs(snapshotParentIn(poolPath(pool), snap.volume), DIR_MODE);
      await buildAtomically({
        dst: driver.snapshotPath(pool, snap),
        create: (p) => mkdirOne(p).then(() => undefined),
        remove: removeTree,
        fill: (p) => cloneTree({ src: vol, dst: p, signal }),
      });
    },

    // a received snapshot lands in its own place, not in the volume, which would then be copied (migration)
    snapshotLanding: {
      async begin(pool, snap) {
        await existingVolume(pool, snap.volume);
        await makeDirs(snapshotParentIn(poolPath(pool), snap.volume), DIR_MODE);
        const p = partialPath(driver.snapshotPath(pool, snap));
        await removeTree(p);
        await mkdirOne(p);
        return p;
      },
      adopt: (pool, snap) => rename(partialPath(driver.snapshotPath(pool, snap)), driver.snapshotPath(pool, snap)),
    },

    async removeSnapshot(pool, snap) {
      const p = driver.snapshotPath(pool, snap);
      await removeTree(p);
      await removeTree(partialPath(p));
      await removeEmptyDir(path.dirname(p));
    },

    async restoreSnapshot(pool, snap, signal) {
      const from = driver.snapshotPath(pool, snap);
      if (!(await pathExists(from))) throw new Error(`cannot restore: snapshot ${from} does not exist`);
      const vol = driver.volumePath(pool, snap.volume);
      await mkdirOne(vol);
      // Not atomic, but converging: an interrupted restore is completed by running it again.
      await syncTree({ src: from, dst: vol, checksum: true, signal });
    },
  };

  async function existingVolume(pool: PoolSpec, vol: VolumeRef): Promise<string> {
    const p = driver.volumePath(pool, vol);
    if (!(await driver.volumeExists(pool, vol))) throw new Error(`volume ${p} does not exist`);
    return p;
  }

  return driver;
}
