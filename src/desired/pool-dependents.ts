import { eq, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { containers, storageVolumes } from './schema/index.ts';

/** A disk device on `pool` among a devices map (a jsonb column or expression). */
const diskOn = (devices: SQL | typeof containers.devices, pool: string) =>
  sql`exists (select 1 from jsonb_each(${devices}) d where d.value->>'type' = 'disk' and d.value->>'pool' = ${pool})`;

/**
 * What must be reconciled again when a storage pool converges or changes: the containers on it (by
 * their root volume, by a disk device of their own, or of one of their profiles, a custom volume
 * attached included) and the volumes it holds, custom and image ones. One query each. A container
 * whose own device overrides a profile's disk on the pool is named too: one needless reconcile.
 */
export async function poolDependents(
  db: DbOrTx,
  pool: string,
): Promise<{ containers: string[]; customVolumes: string[]; imageVolumes: string[] }> {
  const [cts, vols] = await Promise.all([
    db
      .select({ id: containers.id })
      .from(containers)
      .where(
        or(
          sql`exists (select 1 from ${storageVolumes} v where v.id = ${containers.id} and v.pool = ${pool})`,
          diskOn(containers.devices, pool),
          // A profile of its project or of default (where a project without its own profiles takes them).
          sql`exists (select 1 from profiles p where p.project in (${containers.project}, 'default')
                and ${containers.profiles} @> jsonb_build_array(p.name) and ${diskOn(sql`p.devices`, pool)})`,
        ),
      ),
    db
      .select({ id: storageVolumes.id, type: storageVolumes.type })
      .from(storageVolumes)
      .where(eq(storageVolumes.pool, pool)),
  ]);
  return {
    containers: cts.map((c) => c.id),
    customVolumes: vols.filter((v) => v.type === 'custom').map((v) => v.id),
    imageVolumes: vols.filter((v) => v.type === 'image').map((v) => v.id),
  };
}
