import { and, asc, eq, ne, sql } from 'drizzle-orm';
import { dropMemberStatuses, renameMemberStatuses } from '../desired/member-status.ts';
import type { DbOrTx } from '../db/types.ts';
import { cachedLocalRead } from '../desired/cached-reads.ts';
import { relocateContainers } from '../desired/move-container-rows.ts';
import { ConflictError, NotFoundError } from '../desired/errors.ts';
import { moveMemberKeys, writeMemberKey } from '../desired/server-config.ts';
import { moveNetworkMemberConfig } from '../desired/networks.ts';
import { movePoolMemberConfig } from '../desired/storage-pools.ts';
import { relocateVolumes } from '../desired/storage-volumes.ts';
import {
  clusterMembers,
  containers,
  serverConfig,
  storageVolumes,
  type ClusterMemberRow,
} from '../desired/schema/index.ts';

/** Seconds without a heartbeat before a member is shown Offline (LXD's default for cluster.offline_threshold). */
export const DEFAULT_OFFLINE_THRESHOLD_S = 20;

/** Serializes member registration (adoption of rows nobody holds) between daemons starting together. */
const MEMBERS_LOCK = 0x73766364_0002;

export interface MemberView extends ClusterMemberRow {
  /** A heartbeat within the offline threshold, by the database's clock. */
  online: boolean;
}

/**
 * At start: this daemon's member row (created, or its heartbeat renewed). When it is the only member, rows
 * written before members existed (location '') become its own, so an upgraded standalone server keeps its
 * containers; with other members present nothing is adopted, so a daemon never takes what another holds.
 */
export async function registerMember(
  db: DbOrTx,
  m: { name: string; architecture: string },
): Promise<{ adopted: number }> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${MEMBERS_LOCK})`);
    await tx
      .insert(clusterMembers)
      .values({ name: m.name, architecture: m.architecture })
      .onConflictDoUpdate({
        target: clusterMembers.name,
        set: { heartbeatAt: sql`now()`, architecture: m.architecture },
      });
    const others = await tx
      .select({ name: clusterMembers.name })
      .from(clusterMembers)
      .where(ne(clusterMembers.name, m.name));
    if (others.length > 0) return { adopted: 0 };
    const adopted = await relocateContainers(tx, '', m.name);
    await relocateVolumes(tx, '', m.name);
    return { adopted };
  });
}

/** Renews this member's heartbeat; false when its row is gone (the member was removed from the cluster). */
export async function renewHeartbeat(db: DbOrTx, name: string): Promise<boolean> {
  const rows = await db
    .update(clusterMembers)
    .set({ heartbeatAt: sql`now()` })
    .where(eq(clusterMembers.name, name))
    .returning({ name: clusterMembers.name });
  return rows.length > 0;
}

/** `cluster.offline_threshold` in seconds (cluster-wide), or its default. */
export async function readOfflineThreshold(db: DbOrTx): Promise<number> {
  const [row] = await db
    .select({ value: serverConfig.value })
    .from(serverConfig)
    .where(and(eq(serverConfig.node, ''), eq(serverConfig.key, 'cluster.offline_threshold')));
  const n = Number(row?.value);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_OFFLINE_THRESHOLD_S;
}

/** Every member with whether it is online now; only clustered ones when `clusteredOnly`. */
export async function listMembers(db: DbOrTx, opts: { clusteredOnly?: boolean } = {}): Promise<MemberView[]> {
  const threshold = await readOfflineThreshold(db);
  const rows = await db
    .select({
      row: clusterMembers,
      online: sql<boolean>`${clusterMembers.heartbeatAt} > now() - make_interval(secs => ${threshold})`,
    })
    .from(clusterMembers)
    .where(opts.clusteredOnly ? eq(clusterMembers.clustered, true) : undefined)
    .orderBy(asc(clusterMembers.name));
  return rows.map((r) => ({ ...r.row, online: !!r.online }));
}

export async function readMember(db: DbOrTx, name: string): Promise<MemberView> {
  const m = (await listMembers(db)).find((r) => r.name === name);
  if (!m) throw new NotFoundError(`Cluster member "${name}" not found`);
  return m;
}

/**
 * A member accepted into a cluster whose database it does not use yet (it reaches it once it has restarted
 * on it): its row, clustered, with its address and the member-local `core.https_address` it serves on.
 */
export async function admitMember(tx: DbOrTx, m: { name: string; address: string; roles: string[] }): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${MEMBERS_LOCK})`);
  const [clash] = await tx.select().from(clusterMembers).where(eq(clusterMembers.name, m.name));
  if (clash) throw new ConflictError(`Cluster member "${m.name}" already exists`);
  await tx.insert(clusterMembers).values({ name: m.name, address: m.address, clustered: true, roles: m.roles });
  await writeMemberKey(tx, m.name, 'core.https_address', m.address);
}

/** Bootstrap or join: this member is clustered, reachable at `address`. */
export async function markClustered(
  db: DbOrTx,
  name: string,
  set: { address: string; roles: string[] },
): Promise<void> {
  await db
    .update(clusterMembers)
    .set({ clustered: true, address: set.address, roles: set.roles })
    .where(eq(clusterMembers.name, name));
}

/** A member's containers and custom volumes: a member holding any cannot join, or be removed without force. */
export async function countHeld(db: DbOrTx, name: string): Promise<{ containers: number; volumes: number }> {
  const [c] = await db.select({ n: sql<number>`count(*)::int` }).from(containers).where(eq(containers.location, name));
  const [v] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(storageVolumes)
    .where(and(eq(storageVolumes.location, name), eq(storageVolumes.type, 'custom')));
  return { containers: c?.n ?? 0, volumes: v?.n ?? 0 };
}

/** Rename a member: its row, and the location of what it holds, in one transaction. */
export async function renameMember(db: DbOrTx, from: string, to: string): Promise<void> {
  await db.transaction(async (tx) => {
    const [clash] = await tx.select().from(clusterMembers).where(eq(clusterMembers.name, to));
    if (clash) throw new ConflictError(`Cluster member "${to}" already exists`);
    const done = await tx
      .update(clusterMembers)
      .set({ name: to })
      .where(eq(clusterMembers.name, from))
      .returning({ name: clusterMembers.name });
    if (!done.length) throw new NotFoundError(`Cluster member "${from}" not found`);
    await relocateContainers(tx, from, to);
    await relocateVolumes(tx, from, to);
    await moveMemberKeys(tx, from, to);
    await movePoolMemberConfig(tx, from, to);
    await moveNetworkMemberConfig(tx, from, to);
    await renameMemberStatuses(tx, from, to);
  });
}

/** Remove a member's row (and its member-local server keys, and its status rows of pools and networks). */
export async function deleteMember(db: DbOrTx, name: string): Promise<void> {
  await db.transaction(async (tx) => {
    const done = await tx.delete(clusterMembers).where(eq(clusterMembers.name, name)).returning();
    if (!done.length) throw new NotFoundError(`Cluster member "${name}" not found`);
    await moveMemberKeys(tx, name, '');
    await movePoolMemberConfig(tx, name, '');
    await moveNetworkMemberConfig(tx, name, '');
    // Deletions of pools and networks no longer wait for its part (the next reconcile of each finishes them).
    await dropMemberStatuses(tx, name);
  });
}

/**
 * The member a create without `target` goes to: the online clustered member holding fewest containers, other
 * than those in `skip` (members a create could not reach just now).
 */
export async function leastLoadedMember(
  db: DbOrTx,
  skip: ReadonlySet<string> = new Set(),
): Promise<string | undefined> {
  const online = (await listMembers(db, { clusteredOnly: true })).filter((m) => m.online && !skip.has(m.name));
  if (!online.length) return undefined;
  const counts = await db
    .select({ location: containers.location, n: sql<number>`count(*)::int` })
    .from(containers)
    .groupBy(containers.location);
  const of = new Map(counts.map((r) => [r.location, r.n]));
  return online.reduce((best, m) => ((of.get(m.name) ?? 0) < (of.get(best.name) ?? 0) ? m : best)).name;
}

/** This member leaves: it stays a daemon on the database, no longer listed as a member. */
export async function markUnclustered(db: DbOrTx, name: string): Promise<void> {
  await db
    .update(clusterMembers)
    .set({ clustered: false, address: '', roles: [] })
    .where(eq(clusterMembers.name, name));
}

/**
 * The names of the clustered members: an object's `location` is shown only once its member is clustered ('none'
 * before, as LXD). Every list and get of containers and volumes asks: on the embedded engine it is read again
 * only after a write of the table (a heartbeat every 3 s), not once per request (cachedLocalRead). The set is
 * shared: callers must not change it.
 */
export function clusteredMemberNames(db: DbOrTx): Promise<ReadonlySet<string>> {
  return cachedLocalRead(db, 'clustered member names', ['cluster_members'], async () => {
    const rows = await db
      .select({ name: clusterMembers.name })
      .from(clusterMembers)
      .where(eq(clusterMembers.clustered, true));
    return new Set(rows.map((r) => r.name));
  });
}
