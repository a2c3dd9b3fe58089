import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { cachedPools } from '../desired/cached-reads.ts';
import { CONTAINER_KIND, readContainerById } from '../desired/containers.ts';
import { poolSpecOf } from '../host/layout.ts';
import type { RsyncFeature } from '../host/migration/rsync-args.ts';
import { sweepTransferDirs } from '../host/migration/rsync-transfer.ts';
import type { StorageDriver } from '../host/storage/types.ts';
import type { Operations } from '../operations/index.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import type { MigrationDeps } from './migration-deps.ts';
import { receiveContainer, type ReceiveContainerRequest } from './receive-container.ts';
import { sendContainer, type SendContainerRequest } from './send-container.ts';
import { receiveVolume, type ReceiveVolumeRequest } from './receive-volume.ts';
import { sendVolume, type SendVolumeRequest } from './send-volume.ts';
import { readVolumeById } from '../desired/storage-volumes.ts';
import { createStaging } from './staging.ts';
import type { LeavingMarks } from './leaving-marks.ts';
import { receiveMovedContainer, type ReceiveMoveRequest } from './receive-moved-container.ts';
import type { ContainerRow, StorageVolumeRow } from '../desired/schema/index.ts';

export interface MigrationOptions {
  db: Db;
  node: string;
  ops: Operations;
  log: Logger;
  stateDir: string;
  storage: { driverFor(name: string): StorageDriver };
  reconcile: { enqueue(kind: string, key: string, reason: string): void };
  convergence: Pick<Convergence, 'wait'>;
  /** The rsync features offered (default xattrs and delete: see MigrationDeps.rsyncFeatures). */
  rsyncFeatures?: readonly RsyncFeature[];
  /** Containers moving from this member to another (leaving-marks.ts). */
  leaving: LeavingMarks;
}

/** The migration service of one daemon: its roles, and the sweep of what failed transfers left. */
export function createMigrations(o: MigrationOptions) {
  const pools: MigrationDeps['pools'] = async (name) => {
    const row = (await cachedPools(o.db)).find((p) => p.name === name);
    if (!row) throw new Error(`Storage pool "${name}" does not exist`);
    const spec = poolSpecOf(row, o.stateDir, o.node);
    const driver = o.storage.driverFor(row.driver);
    const health = await driver.poolHealth(spec);
    if (!health.ready) throw new Error(`Storage pool "${name}" is not ready: ${health.problem ?? 'not mounted'}`);
    return { spec, driver };
  };
  const staging = createStaging({ stateDir: o.stateDir, pools });
  const deps: MigrationDeps = {
    db: o.db,
    node: o.node,
    ops: o.ops,
    log: o.log,
    reconcile: o.reconcile,
    convergence: o.convergence,
    pools,
    staging,
    rsyncFeatures: o.rsyncFeatures ?? ['xattrs', 'delete'],
  };
  return {
    sendContainer: (ct: ContainerRow, req: SendContainerRequest) => sendContainer(deps, ct, req),
    receiveContainer: (req: ReceiveContainerRequest) => receiveContainer(deps, req),
    sendVolume: (vol: StorageVolumeRow, req: SendVolumeRequest) => sendVolume(deps, vol, req),
    receiveVolume: (req: ReceiveVolumeRequest) => receiveVolume(deps, req),
    receiveMovedContainer: (req: ReceiveMoveRequest) => receiveMovedContainer(deps, req),
    /**
     * At start, once pools are up: remove volumes whose transfer never committed (a container's is this
     * member's only once its row says so: a move stages under the id of a row another member holds), and
     * the copies of containers that moved away while this member was down.
     */
    async sweep(): Promise<number> {
      await sweepTransferDirs();
      const removed = await staging.sweep(async (kind, id) => {
        if (kind !== 'container') return (await readVolumeById(o.db, id)) !== undefined;
        const row = await readContainerById(o.db, id);
        return !!row && (row.location === o.node || row.location === '');
      });
      for (const id of await o.leaving.list()) {
        const row = await readContainerById(o.db, id);
        if (row?.location === o.node) await o.leaving.remove(id);
        else o.reconcile.enqueue(CONTAINER_KIND, id, 'moved to another member: its copy here goes');
      }
      return removed;
    },
  };
}
export type Migrations = ReturnType<typeof createMigrations>;
