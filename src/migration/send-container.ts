import { allContainerSnapshots } from '../desired/container-snapshots.ts';
import { containerUrl, expandStoredContainer } from '../desired/containers.ts';
import { ValidationError } from '../desired/errors.ts';
import { readContainerRuntime } from '../desired/runtime-reads.ts';
import type { ContainerRow, OperationRow } from '../desired/schema/index.ts';
import type { IdMapEntry } from '../host/migration/migration-codec.ts';
import type { MigrationChannels } from './migration-channels.ts';
import { peerOf, refusedLive, reportingFailure, startMigrationTask } from './migration-task.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { snapshotToWire } from './snapshot-wire.ts';
import { sendStream, type TaskCtx } from './volume-stream.ts';

export interface SendContainerRequest {
  live: boolean;
  containerOnly: boolean;
  /** Push mode: the sink's operation (URL), its secrets and certificate; svcd dials it. */
  target?: { operation: string; secrets: Record<string, string>; certificate?: string };
  /** One snapshot of the container, sent as a stopped container of its own (`lxc copy c/snap other:c2`). */
  snapshot?: { id: string; name: string };
}

/**
 * The source of a container migration (`POST /1.0/containers/<name>` with `migration: true`).
 * Pull (no target): a websocket operation whose metadata holds the control and fs secrets, all
 * strings, as lxc reads them; the sink (or a relaying client) connects within 10 s. Push: a task
 * that dials the sink's operation. Then: our header, the sink's answer, one rsync session per
 * snapshot (oldest first), one for the volume, a final one when the container runs, and the sink's
 * verdict, which is the operation's.
 */
export async function sendContainer(
  deps: MigrationDeps,
  ct: ContainerRow,
  req: SendContainerRequest,
): Promise<OperationRow> {
  const running = !req.snapshot && (await readContainerRuntime(deps.db, ct.id))?.state === 'RUNNING';
  if (req.live && running) throw refusedLive();
  const peer = req.target && peerOf('target', req.target, refusedLive);
  const { devices, config } = await expandStoredContainer(deps.db, ct);
  const rootPool = Object.values(devices).find((d) => d.type === 'disk' && d.path === '/')?.pool;
  if (!rootPool) throw new ValidationError(`Container "${ct.name}" has no root disk`);
  const pool = await deps.pools(rootPool);
  const snapshots =
    req.containerOnly || req.snapshot
      ? []
      : (await allContainerSnapshots(deps.db, ct.id))
          .filter((s) => !s.deletingAt)
          .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  const ref = { id: ct.id, type: 'container' as const };
  return startMigrationTask(
    deps,
    { description: 'Migrating container', project: ct.project, resources: { containers: [containerUrl(ct)] } },
    peer,
    (channels, ctx) => reportingFailure(channels, () => send(channels, ctx)),
  );

  async function send(channels: MigrationChannels, ctx: TaskCtx) {
    const bwlimit = pool.spec.config['rsync.bwlimit'];
    const snapshotDirs = snapshots.map((s) => pool.driver.snapshotPath(pool.spec, { volume: ref, id: s.id }));
    const one = req.snapshot && pool.driver.snapshotPath(pool.spec, { volume: ref, id: req.snapshot.id });
    await sendStream(
      channels,
      {
        header: {
          ...(running ? { criu: 'NONE' as const } : {}),
          idmap: diskIdmap(config['volatile.last_state.idmap'] ?? ct.config['volatile.last_state.idmap']),
          snapshotNames: snapshots.map((s) => s.name),
          snapshots: snapshots.map((s) => snapshotToWire(s)),
          predump: false,
        },
        dirs: [...snapshotDirs, one || pool.driver.volumePath(pool.spec, ref)],
        btrfs: pool.driver.subvolumeStreams && {
          snapshots: snapshotDirs,
          // a snapshot is read-only already; the volume is sent from a read-only snapshot of this moment
          volume: one
            ? async () => ({ path: one, release: async () => {} })
            : (signal) => deps.staging.hold(pool.spec.name, ref, signal),
        },
        running,
        features: deps.rsyncFeatures,
        ...(bwlimit ? { bwlimit } : {}),
        name: req.snapshot ? `${ct.name}/${req.snapshot.name}` : ct.name,
      },
      ctx,
    );
  }
}

/** The on-disk map to announce: svcd keeps root filesystems unshifted, unless one received still waits for its shift. */
function diskIdmap(recorded: string | undefined): IdMapEntry[] {
  if (!recorded) return [];
  try {
    const list = JSON.parse(recorded) as {
      Isuid: boolean;
      Isgid: boolean;
      Hostid: number;
      Nsid: number;
      Maprange: number;
    }[];
    return list.map((m) => ({ isuid: m.Isuid, isgid: m.Isgid, hostid: m.Hostid, nsid: m.Nsid, maprange: m.Maprange }));
  } catch {
    return [];
  }
}
