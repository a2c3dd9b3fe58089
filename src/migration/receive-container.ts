import { randomUUID } from 'node:crypto';
import type { ContainerInput } from '../desired/containers.ts';
import { CONTAINER_KIND, containerUrl, insertContainer, readContainer } from '../desired/containers.ts';
import { insertRestoredSnapshots } from '../desired/container-snapshots.ts';
import { ConflictError, HostFailureError, NotFoundError } from '../desired/errors.ts';
import { validateContainerName } from '../desired/names.ts';
import { lockProfiles } from '../desired/profiles.ts';
import { shiftRules } from '../host/migration/shift-tree.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import type { MigrationChannels } from './migration-channels.ts';
import { peerOf, refusedLive, startMigrationTask } from './migration-task.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { snapshotFromWire } from './snapshot-wire.ts';
import { STAGING_KIND, type Staging } from './staging.ts';
import { receiveStream, type TaskCtx } from './volume-stream.ts';

/** How long the create waits for the received container to converge (its LXC config, its volume row). */
const CONVERGE_MS = 10 * 60_000;

export interface ReceiveContainerRequest {
  project: string;
  name: string;
  /** The container as the client sent it (volatile keys already dropped). */
  input: ContainerInput;
  profileProject: string;
  /** The expanded root disk's pool (validated by the caller). */
  pool: string;
  mode: 'pull' | 'push';
  /** pull: the source's operation URL and secrets. */
  operation?: string;
  secrets?: Record<string, string>;
  certificate?: string;
  live: boolean;
  containerOnly: boolean;
  baseImage?: string;
}

/**
 * The sink of a container migration (`POST /1.0/containers` with source type `migration`): one task
 * that connects the channels (pull: dials the source's operation; push: serves its own secrets), answers
 * the source's header, receives the snapshots (oldest first, each synced into the new volume and
 * snapshotted) and then the volume (twice for a running source), and only then commits the container
 * and snapshot rows in one transaction. A failure at any point reports to the source and removes the
 * staged volume; a crash leaves a staging mark that the next start sweeps (staging.ts).
 */
export async function receiveContainer(deps: MigrationDeps, req: ReceiveContainerRequest): Promise<OperationRow> {
  validateContainerName(req.name);
  if (req.live) throw refusedLive();
  const peer = req.mode === 'pull' ? peerOf('source', req, refusedLive) : undefined;
  await readContainer(deps.db, req.project, req.name).then(
    () => {
      throw new ConflictError(`Container "${req.name}" already exists`);
    },
    (e: unknown) => {
      if (!(e instanceof NotFoundError)) throw e;
    },
  );
  return startMigrationTask(
    deps,
    {
      description: 'Creating container',
      project: req.project,
      resources: { containers: [containerUrl({ name: req.name, project: req.project })] },
    },
    peer,
    async (channels, ctx) => {
      const id = await receive(deps, req, channels, ctx);
      const converged = await deps.convergence.wait(CONTAINER_KIND, id.row, id.generation, CONVERGE_MS);
      if (!converged.ok) throw new HostFailureError(converged.error);
    },
  );
}

async function receive(
  deps: MigrationDeps,
  req: ReceiveContainerRequest,
  channels: MigrationChannels,
  ctx: TaskCtx,
): Promise<{ row: string; generation: number }> {
  let staging: Staging | undefined;
  try {
    const id = randomUUID();
    const got = await receiveStream(
      channels,
      {
        features: deps.rsyncFeatures,
        volumeOnly: req.containerOnly,
        check: (offer) => {
          if (offer.criu === 'CRIU_RSYNC' || offer.criu === 'PHAUL') throw refusedLive();
        },
        subvolumes: (await deps.pools(req.pool)).driver.subvolumeStreams !== undefined,
        stage: (o) => deps.staging.begin({ kind: STAGING_KIND.container, id, pool: req.pool }, o),
        shift: true,
        name: req.name,
      },
      ctx,
    );
    staging = got.staging;
    const now = new Date();
    const config = {
      ...req.input.config,
      ...(req.baseImage ? { 'volatile.base_image': req.baseImage } : {}),
      // the map the tree is on disk in now: container ids (shifted from the sender's map after each session)
      'volatile.last_state.idmap': '[]',
    };
    deps.log.info(
      // rsync first: the fields after it keep the order that readers of this line match
      { rsync: got.rsync.join(','), container: req.name, fs: got.fs, snapshots: got.snapshots.length },
      'container received',
    );
    if (shiftRules(got.offer.idmap ?? []).length > 0)
      deps.log.info(
        { container: req.name, idmap: got.offer.idmap },
        "shifted the received tree from the sender's id map",
      );
    const row = await deps.db.transaction(async (tx) => {
      const snapshots = got.snapshots.map(({ id: snapId, name, wire }) => {
        const s = wire && snapshotFromWire(wire, req.input.architecture, now);
        return {
          id: snapId,
          name,
          architecture: s?.architecture ?? req.input.architecture,
          ephemeral: s?.ephemeral ?? false,
          profiles: s?.profiles ?? req.input.profiles,
          config: withoutVolatile(s?.config ?? req.input.config),
          devices: s ? onPool(s.devices, req.pool) : req.input.devices,
          createdAt: s?.createdAt ?? now,
        };
      });
      await lockProfiles(tx, req.profileProject, [
        ...new Set([...req.input.profiles, ...snapshots.flatMap((s) => s.profiles)]),
      ]);
      const inserted = await insertContainer(
        tx,
        req.project,
        req.name,
        { ...req.input, config, location: deps.node },
        { type: 'migration' },
        'stopped',
        id,
      );
      await insertRestoredSnapshots(tx, inserted.id, snapshots);
      return inserted;
    });
    // committed: the container is the database's now, and the source may delete its own (a move)
    await staging.commit();
    staging = undefined;
    deps.reconcile.enqueue(CONTAINER_KIND, row.id, 'migration received');
    await channels.report(undefined);
    return { row: row.id, generation: row.generation };
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    await channels.report(err);
    await staging?.abort().catch((x: unknown) => deps.log.error({ err: x }, 'removing a failed migration'));
    throw err;
  }
}

/**
 * A snapshot's own root disk names the sender's pool: here it is the container's (as LXD's sink does),
 * or a restore would move the container's root to a pool that does not hold it.
 */
function onPool(devices: Record<string, Record<string, string>>, pool: string) {
  return Object.fromEntries(
    Object.entries(devices).map(([k, d]) => [k, d.type === 'disk' && d.path === '/' && d.pool ? { ...d, pool } : d]),
  );
}

/** volatile.* keys are the sending host's own: a received snapshot starts without them. */
function withoutVolatile(config: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(config).filter(([k]) => !k.startsWith('volatile.')));
}
