import { and, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { lazy } from '../util/lazy.ts';
import { memberStatusesOf } from './member-status.ts';
import { NETWORK_KIND } from './networks.ts';
import { POOL_KIND } from './storage-pools.ts';
import {
  containerRuntime,
  networkRuntime,
  poolRuntime,
  storagePools,
  type MemberStatusRow,
  type ContainerRuntimeRow,
} from './schema/index.ts';

type PoolRuntimeRow = typeof poolRuntime.$inferSelect;
type NetworkRuntimeRow = typeof networkRuntime.$inferSelect;

/**
 * Reads the API makes of rows other modules write (runtime facts from the observers, reconcile
 * status from the reconcilers), so that routes never query tables themselves.
 */

/** The runtime rows of many containers at once (list renders: one query). */
export async function containerRuntimesOf(db: DbOrTx, ids: string[]): Promise<ContainerRuntimeRow[]> {
  return db.select().from(containerRuntime).where(inArray(containerRuntime.id, ids));
}

/** One container's runtime row, absent before it was first observed. */
export async function readContainerRuntime(db: DbOrTx, id: string): Promise<ContainerRuntimeRow | undefined> {
  const [rt] = await db.select().from(containerRuntime).where(eq(containerRuntime.id, id));
  return rt;
}

/** What the pool observer last saw of a pool on this node. */
export async function readPoolRuntime(db: DbOrTx, node: string, pool: string) {
  const [rt] = await db
    .select()
    .from(poolRuntime)
    .where(and(eq(poolRuntime.node, node), eq(poolRuntime.pool, pool)));
  return rt;
}

/** The storage drivers some pool uses. */
export async function usedPoolDrivers(db: DbOrTx): Promise<{ driver: string }[]> {
  return db.selectDistinct({ driver: storagePools.driver }).from(storagePools);
}

/**
 * How pools and networks stand, for one render of one or many of them: each table is read once, on first
 * use, whatever the number of pools, networks and members (a list must not query per item).
 */
export interface StandingReader {
  /** How each member's reconcile of the pool went: one row per member that made (or tried) its part. */
  poolStatus(pool: string): Promise<MemberStatusRow[]>;
  networkStatus(networkId: string): Promise<MemberStatusRow[]>;
  /** What `node`'s pool observer last saw of `pool`. */
  poolRuntime(node: string, pool: string): Promise<PoolRuntimeRow | undefined>;
  /** What each member's host shows of a network: one row per member that looked. */
  networkRuntimes(networkId: string): Promise<NetworkRuntimeRow[]>;
}

export function standingReader(db: DbOrTx): StandingReader {
  const statuses = (kind: string) =>
    lazy(async () => {
      const out = new Map<string, MemberStatusRow[]>();
      for (const r of (await memberStatusesOf(db, kind)).sort((a, b) => a.node.localeCompare(b.node)))
        out.set(r.key, [...(out.get(r.key) ?? []), r]);
      return out;
    });
  const pools = statuses(POOL_KIND);
  const networks = statuses(NETWORK_KIND);
  const poolRuntimes = lazy(async () => {
    const rows = await db.select().from(poolRuntime);
    return new Map(rows.map((r) => [`${r.node}\0${r.pool}`, r]));
  });
  const networkRuntimes = lazy(async () => {
    const out = new Map<string, NetworkRuntimeRow[]>();
    for (const r of await db.select().from(networkRuntime)) out.set(r.networkId, [...(out.get(r.networkId) ?? []), r]);
    return out;
  });
  return {
    poolStatus: async (pool) => (await pools()).get(pool) ?? [],
    networkStatus: async (id) => (await networks()).get(id) ?? [],
    poolRuntime: async (node, pool) => (await poolRuntimes()).get(`${node}\0${pool}`),
    networkRuntimes: async (id) => (await networkRuntimes()).get(id) ?? [],
  };
}
