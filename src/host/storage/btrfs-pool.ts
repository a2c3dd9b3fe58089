/**
 * btrfs pool lifecycle: a pool is mounted at `<stateDir>/storage-pools/<name>` from (a) a sparse loop file
 * `<stateDir>/disks/<name>.img` svcd makes, (b) a block device (`source`), or (c) an existing directory on
 * btrfs (`source`, bind-mounted). Every step of ensure registers its undo, so a failure leaves nothing behind.
 */
import { mkdir, open, realpath, rmdir, stat, truncate, unlink } from 'node:fs/promises';
import path from 'node:path';
import { filesystemType } from './blkid.ts';
import { enableQuota, isOnBtrfs, mkfsBtrfs, resizeToMax } from './btrfs-subvolume.ts';
import { StorageUnsupportedError } from './errors.ts';
import { isErrno, makeDirs, pathExists, removeEmptyDir, removeMadeDirs, statOrUndefined } from './fs-helpers.ts';
import { attachLoop, detachLoop, findLoopDevice, findLoopDevices, refreshLoop } from './loop.ts';
import { mountFs, remount, unmount } from './mount.ts';
import { findMount, mountAt, readMounts } from './mountinfo.ts';
import { OWN_SUBDIRS, POOL_SUBDIRS } from './pool-layout.ts';
import type { PoolHealth, PoolSpec } from './types.ts';
import type { UndoStack } from './undo-stack.ts';
import { withUndo } from './undo-stack.ts';
import { defaultPoolPath, loopFilePath } from '../layout.ts';
import { formatSize, parseSize } from '../../util/size.ts';

export const DEFAULT_LOOP_SIZE = '5GiB';
export const DEFAULT_MOUNT_OPTIONS = 'user_subvol_rm_allowed';

export type BtrfsBacking =
  | { kind: 'loop'; file: string }
  | { kind: 'device'; device: string }
  | { kind: 'directory'; dir: string };

export function btrfsPoolPath(pool: PoolSpec): string {
  return defaultPoolPath(pool.stateDir, pool.name);
}

/** The user's source, or undefined for svcd's own loop file (absent source, or source = `<stateDir>/disks/<name>.img`). */
function source(pool: PoolSpec): string | undefined {
  const s = pool.config.source?.trim();
  if (!s || path.resolve(s) === path.resolve(loopFilePath(pool.stateDir, pool.name))) return undefined;
  return s;
}

/** What backs the pool; refuses a source that is neither a block device nor a directory on btrfs. */
export async function resolveBacking(pool: PoolSpec): Promise<BtrfsBacking> {
  const src = source(pool);
  if (!src) return { kind: 'loop', file: loopFilePath(pool.stateDir, pool.name) };
  const what = `btrfs pool ${pool.name}: source ${src}`;
  if (!path.isAbsolute(src)) throw new Error(`${what} must be an absolute path`);
  const st = await statOrUndefined(src);
  if (!st) throw new Error(`${what} does not exist`);
  if (st.isBlockDevice()) return { kind: 'device', device: src };
  if (st.isDirectory()) {
    const dir = await realpath(src);
    if (await isOnBtrfs(dir)) return { kind: 'directory', dir };
    const fsType = findMount(await readMounts(), dir)?.fsType ?? 'unknown';
    throw new Error(`${what} is a directory on ${fsType}, not on a btrfs filesystem`);
  }
  throw new Error(`${what} is neither a block device nor a directory on a btrfs filesystem`);
}

async function ensureSubdirs(root: string): Promise<void> {
  for (const sub of POOL_SUBDIRS) await mkdir(path.join(root, sub), { recursive: true, mode: 0o711 });
}

/** Loop file: create (sparse) and mkfs if needed, attach (reusing an attachment); returns the device. */
async function prepareLoop(pool: PoolSpec, file: string, undo: UndoStack, signal?: AbortSignal): Promise<string> {
  const bytes = parseSize(pool.config.size?.trim() || DEFAULT_LOOP_SIZE);
  if (!(await pathExists(file))) {
    // The mount point is made only after the file: if it exists, the pool existed and its data is gone.
    if (await pathExists(btrfsPoolPath(pool)))
      throw new Error(`btrfs pool ${pool.name}: backing file ${file} is missing`);
    const madeDirs = await makeDirs(path.dirname(file), 0o700);
    undo.push(`remove ${path.dirname(file)}`, () => removeMadeDirs(madeDirs));
    const fh = await open(file, 'wx', 0o600);
    undo.push(`delete ${file}`, () => unlink(file));
    try {
      await fh.truncate(bytes);
    } finally {
      await fh.close();
    }
  }
  const fsType = await filesystemType(file, signal);
  if (fsType === undefined) await mkfsBtrfs(pool.name, file, signal);
  else if (fsType !== 'btrfs')
    throw new Error(`btrfs pool ${pool.name}: backing file ${file} holds a ${fsType} filesystem, not btrfs`);
  const attached = await findLoopDevice(file);
  if (attached) return attached;
  const device = await attachLoop(file, signal);
  undo.push(`detach ${device}`, () => detachLoop(device));
  return device;
}

/** Block device: format it only if blkid finds no filesystem on it; refuse any other filesystem. */
async function prepareDevice(pool: PoolSpec, device: string, signal?: AbortSignal): Promise<void> {
  const fsType = await filesystemType(device, signal);
  if (fsType === undefined) await mkfsBtrfs(pool.name, device, signal);
  else if (fsType !== 'btrfs')
    throw new Error(`btrfs pool ${pool.name}: refusing to use ${device}: it already holds a ${fsType} filesystem`);
}

/** Create/attach/mount as needed; idempotent; undoes only its own steps on failure. */
export async function ensureBtrfsPool(pool: PoolSpec, signal?: AbortSignal): Promise<void> {
  const target = btrfsPoolPath(pool);
  const mounted = mountAt(await readMounts(), target);
  if (mounted) {
    if (mounted.fsType !== 'btrfs')
      throw new Error(`btrfs pool ${pool.name}: ${target} is mounted but holds ${mounted.fsType}, not btrfs`);
    await enableQuota(target, signal);
    return ensureSubdirs(target);
  }
  const backing = await resolveBacking(pool);
  await withUndo(async (undo) => {
    let device: string | undefined;
    if (backing.kind === 'loop') device = await prepareLoop(pool, backing.file, undo, signal);
    if (backing.kind === 'device') await prepareDevice(pool, (device = backing.device), signal);
    const madeDirs = await makeDirs(target, 0o711);
    undo.push(`remove ${target}`, () => removeMadeDirs(madeDirs));
    if (device !== undefined) {
      const options = pool.config['btrfs.mount_options'] ?? DEFAULT_MOUNT_OPTIONS;
      await mountFs({ source: device, target, fsType: 'btrfs', options }, signal);
    } else if (backing.kind === 'directory') {
      await mountFs({ source: backing.dir, target, bind: true }, signal);
    }
    undo.push(`unmount ${target}`, () => unmount(target));
    await enableQuota(target, signal);
    await ensureSubdirs(target);
  });
}

/** Unmount, detach, and delete what svcd made; a user's source keeps its data (only svcd's empty subdirectories go). */
export async function removeBtrfsPool(pool: PoolSpec, signal?: AbortSignal): Promise<void> {
  const target = btrfsPoolPath(pool);
  const src = source(pool);
  const mounted = mountAt(await readMounts(), target);
  if (mounted && src) for (const sub of OWN_SUBDIRS) await removeEmptyDir(path.join(target, sub));
  // Unmount until nothing is left at the mount point (a crash may have stacked a second mount).
  for (let round = 0; round < 5 && mountAt(await readMounts(), target); round++) await unmount(target, signal);
  const file = src ? undefined : loopFilePath(pool.stateDir, pool.name);
  if (file) for (const d of await findLoopDevices(file, { includeDeleted: true })) await detachLoop(d.device, signal);
  try {
    await rmdir(target);
  } catch (e) {
    if (isErrno(e, 'ENOTEMPTY'))
      throw new Error(`btrfs pool ${pool.name}: ${target} is not empty after unmounting; not removing it`);
    if (!isErrno(e, 'ENOENT')) throw e;
  }
  if (file) await unlink(file).catch((e: unknown) => (isErrno(e, 'ENOENT') ? undefined : Promise.reject(e)));
}

/** Mounted and backed? Read from mountinfo and stat only. */
export async function btrfsPoolHealth(pool: PoolSpec): Promise<PoolHealth> {
  const target = btrfsPoolPath(pool);
  const src = source(pool);
  const file = src ? undefined : loopFilePath(pool.stateDir, pool.name);
  if (file && !(await pathExists(file))) {
    // The mount point is made after the file: without it the pool was simply never created here.
    if (!(await pathExists(target)))
      return { ready: false, problem: `btrfs pool ${pool.name} has not been created on this host yet` };
    return { ready: false, problem: `backing file ${file} is missing` };
  }
  if (src && !(await pathExists(src))) return { ready: false, problem: `source ${src} is missing` };
  const mounted = mountAt(await readMounts(), target);
  if (!mounted) return { ready: false, problem: `btrfs pool ${pool.name} is not mounted at ${target}` };
  if (mounted.fsType !== 'btrfs')
    return { ready: false, problem: `${target} is mounted but holds ${mounted.fsType}, not btrfs` };
  return { ready: true };
}

/** Throw unless the pool is mounted (statfs of an unmounted mount point would describe the wrong filesystem). */
export async function requireMounted(pool: PoolSpec): Promise<string> {
  const target = btrfsPoolPath(pool);
  if (mountAt(await readMounts(), target)?.fsType !== 'btrfs')
    throw new Error(`btrfs pool ${pool.name} is not mounted at ${target}`);
  return target;
}

/** Grow the loop file to config.size, tell the loop device and btrfs; refuse to shrink. */
export async function resizeBtrfsPool(pool: PoolSpec, signal?: AbortSignal): Promise<void> {
  const src = source(pool);
  if (src)
    throw new StorageUnsupportedError(
      `btrfs pool ${pool.name} uses source ${src}: only a loop file made by svcd can be resized`,
    );
  const file = loopFilePath(pool.stateDir, pool.name);
  const bytes = parseSize(pool.config.size?.trim() || DEFAULT_LOOP_SIZE);
  const current = (await stat(file)).size;
  if (bytes < current)
    throw new Error(
      `btrfs pool ${pool.name}: refusing to shrink from ${formatSize(current)} to ${formatSize(bytes)} (pools can only grow)`,
    );
  const target = await requireMounted(pool);
  const device = await findLoopDevice(file);
  if (!device) throw new Error(`btrfs pool ${pool.name}: backing file ${file} is not attached to a loop device`);
  if (bytes > current) await truncate(file, bytes);
  await refreshLoop(device, signal);
  await resizeToMax(target, signal);
}

/** Apply btrfs.mount_options to a mounted pool (a loop or block device pool; a bind mount keeps its source's options). */
export async function remountBtrfsPool(pool: PoolSpec, signal?: AbortSignal): Promise<void> {
  const target = await requireMounted(pool);
  if ((await resolveBacking(pool)).kind === 'directory') return;
  await remount(target, pool.config['btrfs.mount_options'] ?? DEFAULT_MOUNT_OPTIONS, signal);
}
