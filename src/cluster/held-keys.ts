import { and, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { containers, storageVolumes } from '../desired/schema/index.ts';

/**
 * The keys of containers and custom volumes a member holds; for volumes also where one is, for `ownedOnly` (the
 * container reconciler reads its row's location itself).
 */
export function createHeldKeys(db: Db, node: string) {
  return {
    containers: {
      node,
      listOwned: async () =>
        (await db.select({ id: containers.id }).from(containers).where(eq(containers.location, node))).map((r) => r.id),
    },
    volumes: {
      node,
      listOwned: async () =>
        (
          await db
            .select({ id: storageVolumes.id })
            .from(storageVolumes)
            .where(and(eq(storageVolumes.type, 'custom'), eq(storageVolumes.location, node)))
        ).map((r) => r.id),
      locationOf: async (id: string) =>
        (
          await db
            .select({ at: storageVolumes.location })
            .from(storageVolumes)
            .where(and(eq(storageVolumes.id, id), inArray(storageVolumes.type, ['custom', 'container'])))
        )[0]?.at,
    },
  };
}
