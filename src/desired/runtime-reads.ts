import { and, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { POOL_KIND } from './storage-pools.ts';
import {
  containerRuntime,
  networkRuntime,
  poolRuntime,
  reconcileStatus,
  storagePools,
  type ContainerRuntimeRow,
} from './schema/index.ts';

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

/** How the last reconcile of a pool went. */
export async function readPoolReconcileStatus(db: DbOrTx, pool: string) {
  const [st] = await db
    .select()
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, POOL_KIND), eq(reconcileStatus.key, pool)));
  return st;
}

/** The storage drivers some pool uses. */
export async function usedPoolDrivers(db: DbOrTx): Promise<{ driver: string }[]> {
  return db.selectDistinct({ driver: storagePools.driver }).from(storagePools);
}

/** What each member's host shows of a managed network (network_runtime): one row per member that looked. */
export async function readNetworkRuntimes(db: DbOrTx, networkId: string) {
  return db.select().from(networkRuntime).where(eq(networkRuntime.networkId, networkId));
}
