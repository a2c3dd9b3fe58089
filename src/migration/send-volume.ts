import { ValidationError } from '../desired/errors.ts';
import type { OperationRow, StorageVolumeRow } from '../desired/schema/index.ts';
import { listSnapshots, volumeUrl } from '../desired/storage-volumes.ts';
import { peerOf, reportingFailure, startMigrationTask } from './migration-task.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { sendStream } from './volume-stream.ts';

export interface SendVolumeRequest {
  volumeOnly: boolean;
  /** Push mode: the sink's operation (URL), its secrets and certificate; svcd dials it. */
  target?: { operation: string; secrets: Record<string, string>; certificate?: string };
}

/**
 * The source of a custom volume migration (`POST /1.0/storage-pools/<p>/volumes/custom/<v>` with
 * `migration: true`): as a container's (send-container.ts), without criu or id map; the snapshots
 * carry their config and creation dates.
 */
export async function sendVolume(
  deps: MigrationDeps,
  vol: StorageVolumeRow,
  req: SendVolumeRequest,
): Promise<OperationRow> {
  if (vol.type !== 'custom') throw new ValidationError(`Only custom volumes migrate (this one is "${vol.type}")`);
  const peer =
    req.target &&
    peerOf('target', req.target, () => new ValidationError('Live migration is not supported for volumes'));
  const pool = await deps.pools(vol.pool);
  const snapshots = req.volumeOnly
    ? []
    : [...(await listSnapshots(deps.db, vol.id))].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  const ref = { id: vol.id, type: 'custom' as const };
  return startMigrationTask(
    deps,
    { description: 'Migrating storage volume', project: vol.project, resources: { storage_volumes: [volumeUrl(vol)] } },
    peer,
    (channels, ctx) =>
      reportingFailure(channels, async () => {
        const bwlimit = pool.spec.config['rsync.bwlimit'];
        const snapshotDirs = snapshots.map((s) => pool.driver.snapshotPath(pool.spec, { volume: ref, id: s.id }));
        await sendStream(
          channels,
          {
            header: {
              snapshotNames: snapshots.map((s) => s.name),
              snapshots: snapshots.map((s) => ({
                name: s.name,
                localConfig: Object.entries(s.config).map(([key, value]) => ({ key, value })),
                profiles: [],
                ephemeral: false,
                localDevices: [],
                architecture: 0,
                stateful: false,
                creationDate: Math.floor(s.createdAt.getTime() / 1000),
                lastUsedDate: 0,
                expiryDate: 0,
              })),
            },
            dirs: [...snapshotDirs, pool.driver.volumePath(pool.spec, ref)],
            btrfs: pool.driver.subvolumeStreams && {
              snapshots: snapshotDirs,
              volume: (signal) => deps.staging.hold(vol.pool, ref, signal),
            },
            running: false,
            features: deps.rsyncFeatures,
            ...(bwlimit ? { bwlimit } : {}),
            name: vol.name,
          },
          ctx,
        );
      }),
  );
}
