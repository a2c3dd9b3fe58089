/**
 * Cgroups LXC leaves behind: when a start fails, the monitor process is still inside
 * `lxc.monitor.<name>` when LXC tries to remove it (EBUSY, logged as a WARN), so empty
 * `lxc.monitor.<name>` (and sometimes `lxc.payload.<name>`) directories stay in every hierarchy and
 * pile up across retries. This removes them with rmdir only: a cgroup that still has tasks refuses
 * (EBUSY) and is reported, never forced. No process is spawned.
 */
import { readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { readMounts, type MountEntry } from '../storage/mountinfo.ts';
import { cgroupMountsFrom } from './parse-cgroup.ts';

export interface RemoveLeftoversInput {
  name: string;
  /** The cgroup (from the hierarchy roots) LXC creates containers under; `/` for a root-owned lxc-start outside systemd units. */
  base?: string;
  /** For tests: the mount table (default this process's mountinfo). */
  mounts?: readonly MountEntry[];
}

/** Remove `dir` and its child cgroups, deepest first; returns what was removed, throws EBUSY when tasks remain. */
async function rmdirTree(dir: string, removed: string[]): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) await rmdirTree(path.join(dir, e.name), removed);
  }
  await rmdir(dir);
  removed.push(dir);
}

/** Remove the container's leftover cgroup directories (call only when it is STOPPED). */
export async function removeLeftovers(input: RemoveLeftoversInput): Promise<{ removed: string[]; busy: string[] }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(input.name))
    throw new Error(`refusing to look for cgroups of ${JSON.stringify(input.name)}`);
  const mounts = cgroupMountsFrom(input.mounts ?? (await readMounts()));
  const roots = new Set([...mounts.v1.values(), ...(mounts.v2 ? [mounts.v2] : [])].map((m) => m.mountPoint));
  const removed: string[] = [];
  const busy: string[] = [];
  for (const mountPoint of roots) {
    for (const kind of ['lxc.monitor', 'lxc.payload']) {
      const dir = path.join(mountPoint, input.base ?? '/', `${kind}.${input.name}`);
      try {
        await rmdirTree(dir, removed);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue;
        // EBUSY: tasks or child cgroups remain; ENOTEMPTY: not a cgroup directory at all — leave both alone
        if (code === 'EBUSY' || code === 'ENOTEMPTY') busy.push(dir);
        else throw e;
      }
    }
  }
  return { removed, busy };
}
