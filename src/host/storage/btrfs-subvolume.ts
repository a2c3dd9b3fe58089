/** btrfs subvolume operations (runners around btrfs-progs); subvolume detection by stat/statfs, no spawn. */
import { lstat, readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../exec.ts';
import { btrfsArgs, parseQgroupLimit } from './btrfs-args.ts';
import { removeTree, statOrUndefined } from './fs-helpers.ts';

/** statfs f_type of btrfs. */
export const BTRFS_SUPER_MAGIC = 0x9123683e;
/** Inode number of every subvolume's root directory. */
const SUBVOLUME_ROOT_INO = 256;

const TIMEOUT_MS = 10 * 60_000;

function btrfs(args: string[], signal?: AbortSignal): Promise<string> {
  return runCommand('btrfs', args, { signal, timeoutMs: TIMEOUT_MS });
}

/** Is `p` on a btrfs filesystem? */
export async function isOnBtrfs(p: string): Promise<boolean> {
  return (await statfs(p)).type === BTRFS_SUPER_MAGIC;
}

/**
 * Is `p` the root of a btrfs subvolume? (false when absent) Its stat in the thread pool: on a pool just mounted
 * (a boot), btrfs reads the subvolume's root from the loop device first, which took up to a millisecond each, and a
 * boot asks for every container it starts.
 */
export async function isSubvolume(p: string): Promise<boolean> {
  const st = await stat(p).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
    throw e;
  });
  return st?.isDirectory() === true && st.ino === SUBVOLUME_ROOT_INO && (await isOnBtrfs(p));
}

export async function createSubvolume(p: string, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.subvolumeCreate(p), signal);
}

export async function snapshotSubvolume(
  src: string,
  dst: string,
  readOnly: boolean,
  signal?: AbortSignal,
): Promise<void> {
  await btrfs(btrfsArgs.snapshot(src, dst, readOnly), signal);
}

export async function setReadOnly(p: string, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.setReadOnly(p), signal);
}

export async function setReceivedWritable(p: string, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.setReceivedWritable(p), signal);
}

/** Subvolumes nested anywhere below `dir` (not descending into them: their own nesting is theirs). */
async function nestedSubvolumes(dir: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const p = path.join(dir, entry.name);
    if ((await lstat(p)).ino === SUBVOLUME_ROOT_INO) found.push(p);
    else found.push(...(await nestedSubvolumes(p)));
  }
  return found;
}

/**
 * Delete the subvolume at `p` with every subvolume nested in it (innermost first); a plain directory left
 * in its place (e.g. by an interrupted copy) is removed too. Absent is fine.
 */
export async function deleteSubvolumeTree(p: string, signal?: AbortSignal): Promise<void> {
  const st = await statOrUndefined(p);
  if (!st) return;
  if (!st.isDirectory()) return removeTree(p);
  for (const nested of await nestedSubvolumes(p)) await deleteSubvolumeTree(nested, signal);
  if (await isSubvolume(p)) await btrfs(btrfsArgs.subvolumeDelete(p), signal);
  else await removeTree(p);
}

/** Set (bytes) or clear (undefined) the referenced-size limit of the subvolume's qgroup. */
export async function setQgroupLimit(p: string, bytes: number | undefined, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.qgroupLimit(bytes, p), signal);
}

/** The subvolume's referenced-size limit: bytes, undefined for none, null when it cannot be read. */
export async function readQgroupLimit(p: string, signal?: AbortSignal): Promise<number | undefined | null> {
  const out = await btrfs(btrfsArgs.qgroupShow(p), signal).catch(() => '');
  return parseQgroupLimit(out);
}

export async function enableQuota(mountPoint: string, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.quotaEnable(mountPoint), signal);
}

export async function resizeToMax(mountPoint: string, signal?: AbortSignal): Promise<void> {
  await btrfs(btrfsArgs.resizeMax(mountPoint), signal);
}

export async function mkfsBtrfs(label: string, target: string, signal?: AbortSignal): Promise<void> {
  await runCommand('mkfs.btrfs', btrfsArgs.mkfs(label, target), { signal, timeoutMs: TIMEOUT_MS });
}
