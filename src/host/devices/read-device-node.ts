import { stat } from 'node:fs/promises';

/** What a host path is, as far as a unix-char/unix-block device cares. */
export type HostNode = { type: 'char' | 'block'; major: number; minor: number } | { type: 'other' };

/** Major and minor of a Linux `dev_t` (glibc's gnu_dev_major/gnu_dev_minor). Pure. */
export function splitDevT(rdev: bigint): { major: number; minor: number } {
  const major = Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
  const minor = Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
  return { major, minor };
}

/** The device node at `p` (symlinks followed), `other` for anything else, undefined when absent. */
export async function readDeviceNode(p: string): Promise<HostNode | undefined> {
  const st = await stat(p, { bigint: true }).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
    throw e;
  });
  if (!st) return undefined;
  if (st.isCharacterDevice()) return { type: 'char', ...splitDevT(st.rdev) };
  if (st.isBlockDevice()) return { type: 'block', ...splitDevT(st.rdev) };
  return { type: 'other' };
}
