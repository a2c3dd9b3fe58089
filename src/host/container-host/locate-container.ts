import path from 'node:path';
import type { DbOrTx } from '../../db/types.ts';
import type { ContainerWithPool } from '../../desired/container-pools.ts';
import type { VolumePaths } from './volume-paths.ts';

export interface ContainerLocation {
  container: ContainerWithPool;
  /** The root volume's directory (metadata.yaml, templates/, rootfs/), once the volume row exists. */
  volumeDir: string | undefined;
  rootfs: string | undefined;
}

/** A container's place on this host: its row and pool (one join, cached by data version), its volume and rootfs directories. */
export function createLocateContainer(deps: {
  db: DbOrTx;
  paths: VolumePaths;
  /** The container's row and pool (desired state's read, given so that host code never queries). */
  readContainerWithPool: (db: DbOrTx, project: string, name: string) => Promise<ContainerWithPool>;
}) {
  return async (ct: { project: string; name: string }): Promise<ContainerLocation> => {
    const container = await deps.readContainerWithPool(deps.db, ct.project, ct.name);
    const volumeDir = container.pool ? deps.paths.volume(container.pool, container.id) : undefined;
    return { container, volumeDir, rootfs: volumeDir === undefined ? undefined : path.join(volumeDir, 'rootfs') };
  };
}

export type LocateContainer = ReturnType<typeof createLocateContainer>;
