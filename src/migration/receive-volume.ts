import { randomUUID } from 'node:crypto';
import { ConflictError, HostFailureError, NotFoundError, ValidationError } from '../desired/errors.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { insertVolume, readVolume, VOLUME_KIND, volumeUrl } from '../desired/storage-volumes.ts';
import { peerOf, startMigrationTask } from './migration-task.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { STAGING_KIND, type Staging } from './staging.ts';
import { receiveStream } from './volume-stream.ts';

const CONVERGE_MS = 10 * 60_000;

export interface ReceiveVolumeRequest {
  pool: string;
  project: string;
  name: string;
  description: string;
  config: Record<string, string>;
  mode: 'pull' | 'push';
  operation?: string;
  secrets?: Record<string, string>;
  certificate?: string;
  volumeOnly: boolean;
}

/**
 * The sink of a custom volume migration (`POST /1.0/storage-pools/<p>/volumes/custom` with source
 * type `migration`): the stream lands in a staged volume, then the volume and snapshot rows commit in
 * one insert (receive-container.ts has the same shape and the reasons).
 */
export async function receiveVolume(deps: MigrationDeps, req: ReceiveVolumeRequest): Promise<OperationRow> {
  const peer =
    req.mode === 'pull'
      ? peerOf('source', req, () => new ValidationError('Live migration is not supported for volumes'))
      : undefined;
  await readVolume(deps.db, req.pool, req.project, 'custom', req.name).then(
    () => {
      throw new ConflictError(`Storage volume "${req.name}" already exists`);
    },
    (e: unknown) => {
      if (!(e instanceof NotFoundError)) throw e;
    },
  );
  await deps.pools(req.pool);
  return startMigrationTask(
    deps,
    {
      description: 'Creating storage volume',
      project: req.project,
      resources: { storage_volumes: [volumeUrl({ ...req, type: 'custom' })] },
    },
    peer,
    async (channels, ctx) => {
      let staging: Staging | undefined;
      try {
        const id = randomUUID();
        const got = await receiveStream(
          channels,
          {
            features: deps.rsyncFeatures,
            volumeOnly: req.volumeOnly,
            subvolumes: (await deps.pools(req.pool)).driver.subvolumeStreams !== undefined,
            stage: (o) => deps.staging.begin({ kind: STAGING_KIND.custom, id, pool: req.pool }, o),
            shift: false,
            name: req.name,
          },
          ctx,
        );
        staging = got.staging;
        deps.log.info(
          { rsync: got.rsync.join(','), volume: req.name, fs: got.fs, snapshots: got.snapshots.length },
          'storage volume received',
        );
        const now = new Date();
        const row = await insertVolume(deps.db, {
          pool: req.pool,
          project: req.project,
          type: 'custom',
          name: req.name,
          description: req.description,
          config: req.config,
          location: deps.node,
          received: {
            id,
            snapshots: got.snapshots.map((s) => ({
              id: s.id,
              name: s.name,
              description: '',
              config: Object.fromEntries((s.wire?.localConfig ?? []).map((e) => [e.key, e.value])),
              createdAt: s.wire?.creationDate ? new Date(s.wire.creationDate * 1000) : now,
            })),
          },
        });
        await staging.commit();
        staging = undefined;
        deps.reconcile.enqueue(VOLUME_KIND, row.id, 'migration received');
        await channels.report(undefined);
        const converged = await deps.convergence.wait(VOLUME_KIND, row.id, row.generation, CONVERGE_MS);
        if (!converged.ok) throw new HostFailureError(converged.error);
      } catch (e) {
        const err = e instanceof Error ? e : new Error(String(e));
        await channels.report(err);
        await staging?.abort().catch((x: unknown) => deps.log.error({ err: x }, 'removing a failed migration'));
        throw err;
      }
    },
  );
}
