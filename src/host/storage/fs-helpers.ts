/**
 * Small filesystem helpers shared by the drivers (no processes spawned).
 *
 * Calls that only look (stat, lstat, reads of small files) are synchronous: a few µs each, where the
 * promise API costs ~40 µs of CPU per call in thread-pool hand-offs (a container's create and start
 * make dozens). Calls that allocate or free (mkdir, creating, truncating, renaming over or removing
 * files) stay asynchronous: on a filesystem slow at that (ext4 without a journal after mass deletes,
 * or discarding freed blocks) they would stall every request on svcd's one thread.
 */
import { lstatSync, statSync, type Stats } from 'node:fs';
import { chmod, mkdir, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/** stat, or undefined when the path does not exist. */
export async function statOrUndefined(p: string): Promise<Stats | undefined> {
  return statSyncOrUndefined(p);
}

/** stat, or undefined when the path does not exist (synchronous). */
export function statSyncOrUndefined(p: string): Stats | undefined {
  try {
    return statSync(p, { throwIfNoEntry: false });
  } catch (e) {
    if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return undefined;
    throw e;
  }
}

export async function pathExists(p: string): Promise<boolean> {
  return (await statOrUndefined(p)) !== undefined;
}

/**
 * `mkdir -p` that reports which directories it created (outermost first), so a failed multi-step
 * operation can remove exactly those again. Every created directory gets `mode` (umask ignored).
 */
export async function makeDirs(dir: string, mode = 0o711): Promise<string[]> {
  const target = path.resolve(dir);
  const first = await mkdir(target, { recursive: true, mode });
  if (first === undefined) return [];
  const created: string[] = [];
  for (let cur = target; ; cur = path.dirname(cur)) {
    created.unshift(cur);
    if (cur === first || cur === path.dirname(cur)) break;
  }
  for (const d of created) await chmod(d, mode);
  return created;
}

/** rmdir that treats "absent" and "not empty" as nothing to do; returns whether it removed the directory. */
export async function removeEmptyDir(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (e) {
    if (code(e) === 'ENOENT' || code(e) === 'ENOTEMPTY' || code(e) === 'EEXIST') return false;
    throw e;
  }
}

/** Remove directories made by {@link makeDirs}, innermost first, leaving any that something else filled. */
export async function removeMadeDirs(created: readonly string[]): Promise<void> {
  for (const d of [...created].reverse()) await removeEmptyDir(d);
}

/** `rm -rf` (absent is fine). */
export async function removeTree(p: string): Promise<void> {
  // Nothing there (the common case: a leftover that is not): no hand-off to the thread pool.
  let there = true;
  try {
    there = lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    // anything odd (ENOTDIR, EACCES): rm decides, as before
  }
  if (!there) return;
  await rm(p, { recursive: true, force: true });
}

export function isErrno(e: unknown, ...codes: string[]): boolean {
  const c = code(e);
  return c !== undefined && codes.includes(c);
}
