import { and, eq, isNull } from 'drizzle-orm';
import { storageVolumes } from '../../desired/schema/index.ts';
import type { LxcDiskMount } from '../../host/lxc/types.ts';
import { TerminalError } from '../runtime/index.ts';
import { isTrue, type DiskRequest } from './device-specs.ts';
import { readyPool, type RootfsDeps } from './ensure-rootfs.ts';
import type { HostDevicesAdapter } from '../adapters.ts';

/** Custom volumes live in the default project (svcd has no features.storage.volumes yet). */
const VOLUME_PROJECT = 'default';

export interface DiskContext {
  /** The host paths' kinds, mounts and modes. */
  host: Pick<HostDevicesAdapter, 'pathKind' | 'submounts' | 'unsearchableDir'>;
  /** Unprivileged: the host uid/gid the container's root runs as (LXC mounts as that user). */
  unprivilegedRoot?: { uid: number; gid: number } | undefined;
}

/** The host directory of a custom volume, or a TerminalError naming the device when there is no such volume. */
async function volumeSource(
  deps: RootfsDeps,
  r: Extract<DiskRequest, { kind: 'volume' }>,
): Promise<{ source: string; unmapped: boolean }> {
  const [vol] = await deps.db
    .select()
    .from(storageVolumes)
    .where(
      and(
        eq(storageVolumes.pool, r.pool),
        eq(storageVolumes.project, VOLUME_PROJECT),
        eq(storageVolumes.type, 'custom'),
        eq(storageVolumes.name, r.volume),
        isNull(storageVolumes.deletingAt),
      ),
    );
  if (!vol)
    throw new TerminalError(
      `disk "${r.device}": custom storage volume "${r.volume}" does not exist on pool "${r.pool}"`,
    );
  const pool = await readyPool(deps, vol.pool);
  const ref = { id: vol.id, type: 'custom' as const };
  // The volume reconciler creates it; until then this is worth retrying.
  if (!(await pool.driver.volumeExists(pool.spec, ref)))
    throw new Error(
      `disk "${r.device}": custom storage volume "${r.volume}" on pool "${r.pool}" is not created on the host yet`,
    );
  return { source: pool.driver.volumePath(pool.spec, ref), unmapped: isTrue(vol.config['security.unmapped']) };
}

/** What an unprivileged container's root cannot bind: a path it cannot reach, a tree with mounts below it without `recursive`. */
async function checkBindable(device: string, source: string, recursive: boolean, ctx: DiskContext): Promise<void> {
  const root = ctx.unprivilegedRoot;
  if (!root) return;
  if (!recursive) {
    // The kernel refuses (EINVAL) a non-recursive bind that would uncover what a locked submount hides.
    const below = await ctx.host.submounts(source);
    if (below.length > 0) {
      throw new TerminalError(
        `disk "${device}": "${source}" has mounts below it (${below.slice(0, 3).join(', ')}${below.length > 3 ? ', ...' : ''}); an unprivileged container can only bind it with recursive=true`,
      );
    }
  }
  const blocked = await ctx.host.unsearchableDir(source, root.uid, root.gid);
  if (blocked) {
    throw new TerminalError(
      `disk "${device}": the unprivileged container's root (host uid ${root.uid}) cannot reach "${source}": "${blocked.dir}" has mode ${blocked.mode.toString(8).padStart(4, '0')} (make it searchable, e.g. chmod o+x, or use security.privileged=true)`,
    );
  }
}

/**
 * The bind mounts of the non-root disks. A host path is mounted as it is (idmapped only with
 * `shift=true`); a custom volume is mounted idmapped in an unprivileged container, so files the host
 * owns as uid N are uid N inside, unless the volume has `security.unmapped=true` (then host-owned files
 * appear as nobody, as without any shifting). Missing sources are TerminalErrors, except optional host paths.
 */
export async function resolveDisks(
  deps: RootfsDeps,
  requests: readonly DiskRequest[],
  ctx: DiskContext,
): Promise<(LxcDiskMount & { device: string })[]> {
  const out: (LxcDiskMount & { device: string })[] = [];
  const unprivileged = ctx.unprivilegedRoot !== undefined;
  for (const r of requests) {
    const opts = {
      target: r.target,
      readonly: r.readonly,
      recursive: r.recursive,
      ...(r.propagation ? { propagation: r.propagation } : {}),
    };
    if (r.kind === 'volume') {
      const { source, unmapped } = await volumeSource(deps, r);
      await checkBindable(r.device, source, r.recursive ?? false, ctx);
      out.push({
        device: r.device,
        source,
        kind: 'dir',
        ...opts,
        ...(unprivileged && !unmapped ? { idmap: true } : {}),
      });
      continue;
    }
    const kind = await ctx.host.pathKind(r.source);
    if (!kind) {
      if (r.optional) continue;
      throw new TerminalError(
        `disk "${r.device}": host path "${r.source}" does not exist (set optional=true to skip it when missing)`,
      );
    }
    await checkBindable(r.device, r.source, r.recursive ?? false, ctx);
    out.push({
      device: r.device,
      source: r.source,
      kind,
      ...opts,
      ...(unprivileged && r.shift ? { idmap: true } : {}),
    });
  }
  return out;
}
