/**
 * Volume `size` for the dir driver: project quotas (xfs mounted with prjquota/pquota, ext4 mounted with
 * prjquota). Support is read from mountinfo (no process spawned); applying is best effort with chattr and
 * setquota (quota tools) and cannot be exercised on a host without project quotas.
 */
import { realpath } from 'node:fs/promises';
import { runCommand } from '../exec.ts';
import { findMount, hasMountOption, readMounts } from './mountinfo.ts';
import type { MountEntry } from './mountinfo.ts';

export type ProjectQuotaSupport = { ok: true; mountPoint: string; fsType: string } | { ok: false; reason: string };

const OPTIONS_BY_FS: Record<string, readonly string[]> = {
  xfs: ['prjquota', 'pquota', 'pqnoenforce'],
  ext4: ['prjquota'],
};

/** Pure: can `size` be enforced on the filesystem holding `p` (described by its mount entry)? */
export function projectQuotaSupport(mount: MountEntry | undefined, p: string): ProjectQuotaSupport {
  if (!mount) return { ok: false, reason: `size needs project quotas: no mounted filesystem holds ${p}` };
  const where = `the filesystem at ${mount.mountPoint} (${mount.fsType})`;
  const options = OPTIONS_BY_FS[mount.fsType];
  if (!options)
    return { ok: false, reason: `size needs project quotas: ${where} does not support them (only xfs and ext4 do)` };
  if (!options.some((o) => hasMountOption(mount, o))) {
    return {
      ok: false,
      reason: `size needs project quotas: ${where} is not mounted with ${options.slice(0, 2).join(' or ')}`,
    };
  }
  return { ok: true, mountPoint: mount.mountPoint, fsType: mount.fsType };
}

/** Read mountinfo and check the filesystem holding `p` (symlinks resolved when `p` exists). */
export async function probeProjectQuota(p: string): Promise<ProjectQuotaSupport> {
  const resolved = await realpath(p).catch(() => p);
  return projectQuotaSupport(findMount(await readMounts(), resolved), resolved);
}

/**
 * A stable project id for a volume id (FNV-1a, 1..2^31-1). Different volumes may collide with probability
 * ~n²/2^32 on one filesystem; acceptable for a best-effort limit.
 */
export function projectIdFor(volumeId: string): number {
  let h = 0x811c9dc5;
  for (const ch of Buffer.from(volumeId, 'utf8')) {
    h ^= ch;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h % 0x7ffffffe) + 1;
}

export const projectQuotaArgs = {
  /** Set the project id on the directory and make new entries inherit it. */
  chattr: (projectId: number, dir: string) => ['+P', '-p', String(projectId), dir],
  /** Hard block limit in KiB (0 = none); no soft limit, no inode limits. */
  setquota: (projectId: number, bytes: number | undefined, mountPoint: string) => [
    '-P',
    String(projectId),
    '0',
    String(bytes === undefined ? 0 : Math.ceil(bytes / 1024)),
    '0',
    '0',
    mountPoint,
  ],
};

/** Tag `dir` with the volume's project id and set (or clear, with undefined) its hard limit. */
export async function applyProjectQuota(
  opts: { dir: string; volumeId: string; bytes: number | undefined; mountPoint: string },
  signal?: AbortSignal,
): Promise<void> {
  const id = projectIdFor(opts.volumeId);
  await runCommand('chattr', projectQuotaArgs.chattr(id, opts.dir), { signal, timeoutMs: 60_000 });
  await runCommand('setquota', projectQuotaArgs.setquota(id, opts.bytes, opts.mountPoint), {
    signal,
    timeoutMs: 60_000,
  });
}
