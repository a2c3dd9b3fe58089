/**
 * LXD's two steps for a pool in a cluster: `POST /1.0/storage-pools?target=<member>` defines it on one member,
 * with only that member's own keys (source, size), and the pool is Pending; `POST /1.0/storage-pools`
 * without target, once it is defined on every member, gives its cluster-wide config and creates it on every
 * member. A pending row is on no host (storage_pools.pending): reconcilers and observers leave it alone, and
 * its removal is the row's. Each step is one conditional write: two members defining or finishing it at
 * once give one outcome.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import type { ProbeResult } from '../host/storage/driver-catalog.ts';
import { ConflictError, retryOnceIfRaced, NotFoundError, ValidationError } from './errors.ts';
import { withMemberValues } from './member-config-sql.ts';
import { parseMemberConfig } from './member-config.ts';
import { validateName } from './names.ts';
import { deleteMemberStatuses } from './member-status.ts';
import { storagePools, type StoragePoolRow } from './schema/index.ts';
import { checkDriverUsable, type PoolInput, preparePool } from './storage-pools.ts';

/** LXD's member-specific pool keys (db.NodeSpecificStorageConfig). */
const MEMBER_KEYS = ['size', 'source', 'volatile.initial_source', 'zfs.pool_name', 'lvm.thinpool_name', 'lvm.vg_name'];

/** Define the pool on `member` (step one): a new pending row, or the member added to one. */
export async function definePoolOnMember(
  db: Db,
  input: PoolInput,
  member: string,
  probeDriver: (driver: string) => Promise<ProbeResult>,
): Promise<void> {
  validateName('Storage pool', input.name);
  await checkDriverUsable(input.driver, probeDriver);
  const config = input.config ?? {};
  for (const key of Object.keys(config))
    if (!MEMBER_KEYS.includes(key))
      throw new ValidationError(`Config key "${key}" may not be used as member-specific key`);
  parseMemberConfig(
    Object.entries(config).map(([key, value]) => ({ entity: 'storage-pool', name: input.name, key, value })),
  );
  const values = config.source ? { ...config, 'volatile.initial_source': config.source } : config;
  // Another member's first definition committed meanwhile: this one joins it.
  return retryOnceIfRaced(() =>
    db.transaction(async (tx) => {
      const [cur] = await tx.select().from(storagePools).where(eq(storagePools.name, input.name)).for('update');
      if (!cur) {
        await tx.insert(storagePools).values({
          name: input.name,
          driver: input.driver,
          description: input.description ?? '',
          config: {},
          memberConfig: { [member]: values },
          pending: true,
        });
        await deleteMemberStatuses(tx, 'storage-pool', input.name);
        return;
      }
      if (!cur.pending || cur.deletingAt) throw new ValidationError('The storage pool is already created');
      if (cur.driver !== input.driver)
        throw new ValidationError(
          `Requested storage pool driver "${input.driver}" doesn't match driver in existing database record "${cur.driver}"`,
        );
      if (cur.memberConfig[member]) throw new ValidationError(`The storage pool already defined on member "${member}"`);
      await tx
        .update(storagePools)
        .set({ memberConfig: withMemberValues(storagePools.memberConfig, member, values) })
        .where(eq(storagePools.name, input.name));
    }),
  );
}

/**
 * Step two on a pending pool: its cluster-wide config (no member's own keys), once it is defined on every one
 * of `members`; the row is then an ordinary pool, converged by every member. Undefined when there is no
 * pending pool of that name (an ordinary create).
 */
export async function finishPendingPool(
  db: Db,
  stateDir: string,
  input: PoolInput,
  members: readonly string[],
  probeDriver: (driver: string) => Promise<ProbeResult>,
): Promise<StoragePoolRow | undefined> {
  const [cur] = await db.select().from(storagePools).where(eq(storagePools.name, input.name));
  if (!cur?.pending) return undefined;
  for (const key of Object.keys(input.config ?? {}))
    if (MEMBER_KEYS.includes(key)) throw new ValidationError(`Config key "${key}" is cluster member specific`);
  if (input.driver !== cur.driver)
    throw new ValidationError(
      `Requested storage pool driver "${input.driver}" doesn't match driver in existing database record "${cur.driver}"`,
    );
  const missing = members.filter((m) => !cur.memberConfig[m]);
  if (missing.length) throw new ValidationError(`Pool not defined on nodes: ${missing.join(', ')}`);
  const config = await preparePool(db, stateDir, input, probeDriver);
  const [row] = await db
    .update(storagePools)
    .set({
      pending: false,
      config,
      description: input.description ?? cur.description,
      generation: sql`${storagePools.generation} + 1`,
    })
    .where(
      and(
        eq(storagePools.name, input.name),
        eq(storagePools.pending, true),
        eq(storagePools.generation, cur.generation),
      ),
    )
    .returning();
  if (!row) throw new ConflictError(`Storage pool "${input.name}" changed meanwhile; try again`);
  return row;
}

/** A pending pool's removal: its row (nothing of it is on any host). False when it is not pending. */
export async function deletePendingPool(db: Db, name: string): Promise<boolean> {
  const gone = await db
    .delete(storagePools)
    .where(and(eq(storagePools.name, name), eq(storagePools.pending, true)))
    .returning({ name: storagePools.name });
  return gone.length > 0;
}

/** A pool a volume or container may be put on: there, not being removed, not pending. */
export function requireUsablePool(p: StoragePoolRow): StoragePoolRow {
  if (p.deletingAt) throw new NotFoundError(`Storage pool "${p.name}" not found`);
  if (p.pending)
    throw new ValidationError(
      `Storage pool "${p.name}" is pending: it is defined on some members only (create it without target to finish)`,
    );
  return p;
}
