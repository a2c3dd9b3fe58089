/**
 * Small filesystem helpers shared by the drivers (no processes spawned).
 *
 * Metadata calls (stat, mkdir, chmod, rmdir, rename) are synchronous: a few µs each, where the
 * promise API costs ~40 µs of CPU per call in thread-pool hand-offs (a container's create and start
 * make dozens). svcd's storage is on this host, and the embedded database already does its file I/O
 * synchronously on the same thread. Whole trees are removed asynchronously.
 */
import { chmodSync, lstatSync, mkdirSync, rmdirSync, statSync, type Stats } from 'node:fs';
import { rm } from 'node:fs/promises';
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
  const first = mkdirSync(target, { recursive: true, mode });
  if (first === undefined) return [];
  const created: string[] = [];
  for (let cur = target; ; cur = path.dirname(cur)) {
    created.unshift(cur);
    if (cur === first || cur === path.dirname(cur)) break;
  }
  for (const d of created) chmodSync(d, mode);
  return created;
}

/** rmdir that treats "absent" and "not empty" as nothing to do; returns whether it removed the directory. */
export async function removeEmptyDir(dir: string): Promise<boolean> {
  try {
    rmdirSync(dir);
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
