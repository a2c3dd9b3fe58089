import { allContainerSnapshots } from '../desired/container-snapshots.ts';
import { CONTAINER_KIND, containerUrl, expandStoredContainer, readContainerById } from '../desired/containers.ts';
import { ConflictError, HostFailureError, NotFoundError, ValidationError } from '../desired/errors.ts';
import { moveContainerRows } from '../desired/move-container-rows.ts';
import { readFacts, writeFacts } from '../desired/reconcile-facts.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { type ContainerFacts, movedFacts } from '../reconcilers/container/container-facts.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { peerOf, refusedLive, startMigrationTask } from './migration-task.ts';
import { STAGING_KIND, type Staging } from './staging.ts';
import { receiveStream } from './volume-stream.ts';

/** How long the move waits for the container to converge here (its LXC config on this host). */
const CONVERGE_MS = 10 * 60_000;

export interface ReceiveMoveRequest {
  /** The container's id: its row stays the same, only its location changes. */
  id: string;
  /** The member it is leaving, and the generation the move began at. */
  from: string;
  generation: number;
  /** The leaving member's migration source operation (pull), its secrets and certificate. */
  operation: string;
  secrets: Record<string, string>;
  certificate: string;
}

/**
 * The receiving member of a move inside the cluster: pulls the container's snapshots and volume from the
 * member holding it (the same wire as any migration) into this member's part of its pool, under the
 * container's own id and its snapshots' ids, and only then flips the row's location (and its volume's) to
 * this member in one transaction, conditional on nothing having changed meanwhile. Until then nothing names
 * what is staged here: a failure removes it (a crash leaves a mark the next start sweeps), and the
 * container stays where it was.
 */
export async function receiveMovedContainer(deps: MigrationDeps, req: ReceiveMoveRequest): Promise<OperationRow> {
  const ct = await readContainerById(deps.db, req.id);
  if (!ct) throw new NotFoundError('Container not found');
  if (ct.location !== req.from)
    throw new ConflictError(`Container "${ct.name}" is held by "${ct.location}", not by "${req.from}"`);
  if (ct.location === deps.node) throw new ValidationError(`Container "${ct.name}" is on this member already`);
  const peer = peerOf('source', req, refusedLive);
  const { devices } = await expandStoredContainer(deps.db, ct);
  const pool = Object.values(devices).find((d) => d.type === 'disk' && d.path === '/')?.pool;
  if (!pool) throw new ValidationError(`Container "${ct.name}" has no root disk`);
  // Its pool must be ready here before the source is asked for anything.
  await deps.pools(pool);
  const snapshots = (await allContainerSnapshots(deps.db, ct.id)).filter((s) => !s.deletingAt);
  const idOf = new Map(snapshots.map((s) => [s.name, s.id]));
  return startMigrationTask(
    deps,
    { description: 'Moving container', project: ct.project, resources: { containers: [containerUrl(ct)] } },
    peer,
    async (channels, ctx) => {
      let staging: Staging | undefined;
      let moved: { generation: number } | undefined;
      try {
        const got = await receiveStream(
          channels,
          {
            features: deps.rsyncFeatures,
            volumeOnly: false,
            check: (offer) => {
              if (offer.criu === 'CRIU_RSYNC' || offer.criu === 'PHAUL') throw refusedLive();
              const names = offer.snapshotNames ?? [];
              if (names.length !== idOf.size || names.some((n) => !idOf.has(n)))
                throw new ConflictError(`The snapshots of container "${ct.name}" changed while it was being moved`);
            },
            subvolumes: (await deps.pools(pool)).driver.subvolumeStreams !== undefined,
            stage: (o) => deps.staging.begin({ kind: STAGING_KIND.container, id: ct.id, pool }, o),
            shift: true,
            name: ct.name,
            snapshotId: (name) => idOf.get(name)!,
          },
          ctx,
        );
        staging = got.staging;
        // What its facts say of the old member's host goes before the row is this member's (a reconcile
        // here may start at once); they come back if the flip fails.
        const facts = await readFacts(deps.db, CONTAINER_KIND, ct.id);
        await writeFacts(
          deps.db,
          CONTAINER_KIND,
          ct.id,
          movedFacts(facts as ContainerFacts) as Record<string, unknown>,
        );
        moved = await deps.db
          .transaction((tx) =>
            moveContainerRows(tx, { id: ct.id, from: req.from, to: deps.node, generation: req.generation }),
          )
          .catch(async (e: unknown) => {
            await writeFacts(deps.db, CONTAINER_KIND, ct.id, facts).catch(() => undefined);
            throw e;
          });
        // Committed: the container is this member's.
        await staging.commit();
        staging = undefined;
        deps.reconcile.enqueue(CONTAINER_KIND, ct.id, `moved here from ${req.from}`);
        await channels.report(undefined);
      } catch (e) {
        const err = e instanceof Error ? e : new Error(String(e));
        await channels.report(err);
        await staging?.abort().catch((x: unknown) => deps.log.error({ err: x }, 'removing a failed move'));
        throw err;
      }
      const converged = await deps.convergence.wait(CONTAINER_KIND, ct.id, moved.generation, CONVERGE_MS);
      if (!converged.ok) throw new HostFailureError(converged.error);
    },
  );
}
