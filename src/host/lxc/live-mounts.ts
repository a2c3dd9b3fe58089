/**
 * Bind mounts added to and removed from a running container, through the `svcd-mountns` helper
 * (src/host/native/svcd-mountns.c, built by scripts/install-deps.sh): node cannot enter another mount
 * namespace itself (setns is refused to a multithreaded process). The helper takes the source on the host
 * (open_tree), makes it read-only and idmapped as asked, then enters the container's user and mount
 * namespaces and attaches it at the target, which it resolves inside the container.
 */
import { existsSync, readFileSync } from 'node:fs';
import { runCommand } from '../exec.ts';
import { parseMountinfo } from '../storage/mountinfo.ts';
import type { LxcDiskMount } from './types.ts';
import { MountHelperMissingError } from './lxc-errors.ts';
import { inPackage } from '../../util/package-root.ts';

export { MountHelperMissingError };

/** The helper binary: `.build/svcd-mountns` at the top of the checkout (SVCD_MOUNTNS overrides it, for packagers). */
export function mountHelperPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVCD_MOUNTNS ?? inPackage('.build/svcd-mountns');
}

/** A mount inside a running container: a bind of a host path (a disk device, or a unix device's node). */
export type LiveMount = Pick<
  LxcDiskMount,
  'source' | 'target' | 'kind' | 'readonly' | 'recursive' | 'propagation' | 'idmap'
>;

/** The helper's argv for attaching `m` in the container whose init is `pid`. Pure. */
export function attachArgs(pid: number, m: LiveMount): string[] {
  const target = `/${m.target.replace(/^\/+/, '')}`;
  return [
    'attach',
    String(pid),
    m.source,
    target,
    m.kind,
    ...(m.readonly ? ['ro'] : []),
    ...(m.recursive ? ['recursive'] : []),
    ...(m.idmap ? ['idmap'] : []),
    ...(m.propagation ? [`propagation=${m.propagation}`] : []),
  ];
}

function helper(): string {
  const file = mountHelperPath();
  if (!existsSync(file)) throw new MountHelperMissingError(file);
  return file;
}

export async function attachMount(pid: number, m: LiveMount, signal?: AbortSignal): Promise<void> {
  await runCommand(helper(), attachArgs(pid, m), { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
}

/**
 * Unmount whatever is mounted at `target` inside the container (nothing there is success); with
 * `removeFile`, the empty file a device node was mounted on goes too.
 */
export async function detachMount(
  pid: number,
  target: string,
  opts: { removeFile?: boolean; signal?: AbortSignal | undefined } = {},
): Promise<void> {
  const args = ['detach', String(pid), `/${target.replace(/^\/+/, '')}`, ...(opts.removeFile ? ['remove'] : [])];
  await runCommand(helper(), args, { timeoutMs: 30_000, ...(opts.signal ? { signal: opts.signal } : {}) });
}

/** What is mounted in the container, by mount point as seen inside it (the last mount at a path wins), from /proc/<pid>/mountinfo. */
export function readContainerMounts(pid: number): Map<string, { readonly: boolean; root: string }> {
  const out = new Map<string, { readonly: boolean; root: string }>();
  for (const m of parseMountinfo(readFileSync(`/proc/${pid}/mountinfo`, 'utf8'))) {
    out.set(m.mountPoint, { readonly: m.options.includes('ro'), root: m.root });
  }
  return out;
}
