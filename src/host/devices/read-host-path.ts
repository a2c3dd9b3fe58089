import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { readMounts } from '../storage/mountinfo.ts';

export interface PathOwner {
  mode: number;
  uid: number;
  gid: number;
}

/** Whether a process with `uid`/`gid` (no capabilities over the inode) may search a directory. Pure. */
export function canSearch(dir: PathOwner, uid: number, gid: number): boolean {
  if (dir.uid === uid) return (dir.mode & 0o100) !== 0;
  if (dir.gid === gid) return (dir.mode & 0o010) !== 0;
  return (dir.mode & 0o001) !== 0;
}

/** `dir` or `file` for an existing host path (symlinks followed), undefined when absent. */
export async function readPathKind(p: string): Promise<'dir' | 'file' | undefined> {
  const st = await stat(p).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
    throw e;
  });
  if (!st) return undefined;
  return st.isDirectory() ? 'dir' : 'file';
}

/**
 * The first directory on the way to `p` (from `/`, `p` itself excluded) that a process with host
 * `uid`/`gid` cannot search, or undefined when every one can be searched. An unprivileged container's
 * root is such a process when LXC bind-mounts `p` into it. ACLs are not consulted.
 */
export async function findUnsearchableDir(
  p: string,
  uid: number,
  gid: number,
): Promise<{ dir: string; mode: number } | undefined> {
  const parts = path.resolve(p).split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const dir = `/${parts.slice(0, i).join('/')}`;
    const st = await stat(dir);
    if (!canSearch({ mode: st.mode, uid: st.uid, gid: st.gid }, uid, gid)) return { dir, mode: st.mode & 0o7777 };
  }
  return undefined;
}

/** Mount points strictly below `p` (symlinks in `p` resolved) in this mount namespace, from mountinfo. */
export async function listSubmounts(p: string): Promise<string[]> {
  const real = await realpath(p);
  const prefix = real === '/' ? '/' : `${real}/`;
  return [...new Set((await readMounts()).map((m) => m.mountPoint).filter((m) => m.startsWith(prefix) && m !== real))];
}
