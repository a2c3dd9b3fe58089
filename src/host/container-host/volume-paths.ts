import { poolSpecOf } from '../layout.ts';
import type { StorageDriver } from '../storage/types.ts';

type Pool = {
  name: string;
  driver: string;
  config: Record<string, string>;
  memberConfig?: Record<string, Record<string, string>>;
};

export interface VolumePathsDeps {
  stateDir: string;
  /** This member: its own pool source, given at join, places its volumes. */
  node: string;
  driverFor(name: string): StorageDriver;
}

/** The one place a container's root volume directory (and its snapshots') is computed from its pool. */
export function createVolumePaths({ stateDir, node, driverFor }: VolumePathsDeps) {
  const ref = (id: string) => ({ id, type: 'container' as const });
  return {
    volume: (pool: Pool, id: string) => driverFor(pool.driver).volumePath(poolSpecOf(pool, stateDir, node), ref(id)),
    snapshot: (pool: Pool, id: string, snapshotId: string) =>
      driverFor(pool.driver).snapshotPath(poolSpecOf(pool, stateDir, node), { volume: ref(id), id: snapshotId }),
  };
}

export type VolumePaths = ReturnType<typeof createVolumePaths>;
