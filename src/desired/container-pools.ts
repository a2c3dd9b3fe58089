import { and, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { cachedRead } from './cached-reads.ts';
import { NotFoundError } from './errors.ts';
import { containers, storagePools, storageVolumes, type ContainerRow, type StoragePoolRow } from './schema/index.ts';

/** A container with the pool of its root volume (null until the volume row exists). */
export type ContainerWithPool = ContainerRow & { pool: StoragePoolRow | null };

/**
 * A live container by project and name with its root volume's pool, in one join. Kept until a
 * container, pool or volume write changes it (data versions): file and metadata requests are hot paths.
 */
export function readContainerWithPool(db: DbOrTx, project: string, name: string): Promise<ContainerWithPool> {
  return cachedRead(
    db,
    `container-pool\0${project}\0${name}`,
    ['containers', 'storage_pools', 'storage_volumes'],
    async () => {
      const [row] = await db
        .select({ ct: containers, pool: storagePools })
        .from(containers)
        .leftJoin(storageVolumes, eq(storageVolumes.id, containers.id))
        .leftJoin(storagePools, eq(storagePools.name, storageVolumes.pool))
        .where(and(eq(containers.project, project), eq(containers.name, name), isNull(containers.deletingAt)))
        .limit(1);
      if (!row) throw new NotFoundError(`Container "${name}" not found`);
      return { ...row.ct, pool: row.pool };
    },
  );
}

/** The pool of a container's root volume, by container id (undefined until the volume row exists). */
export async function readRootPool(db: DbOrTx, containerId: string): Promise<StoragePoolRow | undefined> {
  const [row] = await db
    .select({ pool: storagePools })
    .from(storageVolumes)
    .innerJoin(storagePools, eq(storagePools.name, storageVolumes.pool))
    .where(eq(storageVolumes.id, containerId))
    .limit(1);
  return row?.pool;
}
