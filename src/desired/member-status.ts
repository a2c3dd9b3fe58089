import { and, eq, ne, type SQL, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { memberStatus, type MemberStatusRow } from './schema/index.ts';
import { takeStatusRowsOfKinds } from './reconcile-facts.ts';

/**
 * The status of objects every member makes on its own host (storage pools and networks), one row per
 * member (schema/reconcile-status.ts): how far that member converged, its last error, and what it knows of
 * its own host's part. A row exists from before the member first touches its host for the object, so the
 * rows say which members may have it there: a pool or network being deleted keeps its desired row until the
 * last of them removed its part (noOtherMemberHas). Every other kind has one holder, and one reconcile_status row.
 */

/** The kinds reconciled by every member (POOL_KIND and NETWORK_KIND: member-status.test.ts checks). */
const MEMBER_KINDS: readonly string[] = ['storage-pool', 'network'];
export const isMemberScoped = (kind: string): boolean => MEMBER_KINDS.includes(kind);

const one = (node: string, kind: string, key: string) =>
  and(eq(memberStatus.kind, kind), eq(memberStatus.key, key), eq(memberStatus.node, node));

/** `node`'s row of (kind, key), absent while it has not touched its host for it. */
export async function readMemberStatus(
  db: DbOrTx,
  node: string,
  kind: string,
  key: string,
): Promise<MemberStatusRow | undefined> {
  const [row] = await db
    .select()
    .from(memberStatus)
    .where(one(node, kind, key));
  return row;
}

/** What `node` knows of its host's part of (kind, key); undefined when it has no row. */
export async function readMemberFacts(
  db: DbOrTx,
  node: string,
  kind: string,
  key: string,
): Promise<Record<string, unknown> | undefined> {
  const [row] = await db
    .select({ facts: memberStatus.facts })
    .from(memberStatus)
    .where(one(node, kind, key));
  return row?.facts;
}

/**
 * `node`'s row of (kind, key) made, before it first touches its host for it, only while the object is live:
 * `lockLive` locks its desired row (FOR SHARE) and says whether it exists and is not being deleted. A deletion
 * marked meanwhile waits for this, and then sees the row (so it waits for this member's removal); one marked
 * before is seen here, and nothing is written. Returns whether the row was made.
 */
export async function claimMemberStatus(
  db: Db,
  node: string,
  kind: string,
  key: string,
  facts: Record<string, unknown>,
  lockLive: (tx: DbOrTx) => Promise<boolean>,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await lockLive(tx))) return false;
    await tx
      .insert(memberStatus)
      .values({ node, kind, key, facts })
      .onConflictDoUpdate({ target: [memberStatus.kind, memberStatus.key, memberStatus.node], set: { facts } });
    return true;
  });
}

export async function writeMemberFacts(
  db: DbOrTx,
  node: string,
  kind: string,
  key: string,
  facts: Record<string, unknown>,
): Promise<void> {
  await db
    .insert(memberStatus)
    .values({ node, kind, key, facts, updatedAt: new Date() })
    .onConflictDoUpdate({
      target: [memberStatus.kind, memberStatus.key, memberStatus.node],
      set: { facts, updatedAt: new Date() },
    });
}

/** `node` converged (kind, key) to `observedGeneration`: its last error cleared, its facts when given. */
export async function recordMemberConverged(
  db: DbOrTx,
  node: string,
  kind: string,
  key: string,
  observedGeneration: number,
  facts?: Record<string, unknown>,
): Promise<void> {
  const updatedAt = new Date();
  await db
    .insert(memberStatus)
    .values({ node, kind, key, observedGeneration, updatedAt, ...(facts ? { facts } : {}) })
    .onConflictDoUpdate({
      target: [memberStatus.kind, memberStatus.key, memberStatus.node],
      set: {
        observedGeneration: sql`greatest(${memberStatus.observedGeneration}, ${observedGeneration})`,
        lastError: '',
        terminal: false,
        updatedAt,
        ...(facts ? { facts } : {}),
      },
    });
}

export async function recordMemberFailed(
  db: DbOrTx,
  node: string,
  kind: string,
  key: string,
  message: string,
  terminal: boolean,
): Promise<void> {
  await db
    .insert(memberStatus)
    .values({ node, kind, key, lastError: message, terminal, updatedAt: new Date() })
    .onConflictDoUpdate({
      target: [memberStatus.kind, memberStatus.key, memberStatus.node],
      set: { lastError: message, terminal, updatedAt: new Date() },
    });
}

/**
 * The condition under which the desired row of (kind, key) may go with `node`'s removal of its part: no other
 * member has a row of it. Used in the transaction that records the removal, after a lock of the desired row
 * (FOR UPDATE, sent first): two members finishing at once are serialized, and the second's condition, read
 * after the first committed, sees the first's row gone. `node`'s own row is deleted in the same transaction
 * (the settler's leaveMemberStatus).
 */
export const noOtherMemberHas = (node: string, kind: string, key: string): SQL =>
  sql`not exists (select 1 from ${memberStatus} where ${and(
    eq(memberStatus.kind, kind),
    eq(memberStatus.key, key),
    ne(memberStatus.node, node),
  )})`;

/** `node` removed its host's part of (kind, key): its row goes. */
export async function leaveMemberStatus(tx: DbOrTx, node: string, kind: string, key: string): Promise<void> {
  await tx.delete(memberStatus).where(one(node, kind, key));
}

/** Every member's row of (kind, key): a pool made anew under a former pool's name starts with none. */
export async function deleteMemberStatuses(tx: DbOrTx, kind: string, key: string): Promise<void> {
  await tx.delete(memberStatus).where(and(eq(memberStatus.kind, kind), eq(memberStatus.key, key)));
}

/** Every member's rows of `kind` (a render of pools or networks reads them once). */
export async function memberStatusesOf(db: DbOrTx, kind: string): Promise<MemberStatusRow[]> {
  return db.select().from(memberStatus).where(eq(memberStatus.kind, kind));
}

/** A member renamed: its rows follow it (in the rename's transaction). */
export async function renameMemberStatuses(tx: DbOrTx, from: string, to: string): Promise<void> {
  await tx.update(memberStatus).set({ node: to }).where(eq(memberStatus.node, from));
}

/**
 * A member removed from the cluster: its rows go, so that deletions waiting for its removal finish without it
 * (a force-removed member's host is not ours to clean any more).
 */
export async function dropMemberStatuses(tx: DbOrTx, node: string): Promise<void> {
  await tx.delete(memberStatus).where(eq(memberStatus.node, node));
}

/**
 * At start: the status rows of these kinds that an earlier svcd kept once for all members (reconcile_status)
 * become this member's, their facts describing this host. The first member to start after the upgrade takes
 * them; the others start without, as a member that never had the object does, and make theirs at their first
 * reconcile. Returns how many were taken.
 */
export async function adoptSharedStatuses(db: Db, node: string): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await takeStatusRowsOfKinds(tx, MEMBER_KINDS);
    if (!rows.length) return 0;
    await tx
      .insert(memberStatus)
      .values(
        rows.map((r) => ({
          node,
          kind: r.kind,
          key: r.key,
          observedGeneration: r.observedGeneration,
          lastError: r.lastError,
          terminal: r.terminal,
          facts: r.facts,
        })),
      )
      .onConflictDoNothing();
    return rows.length;
  });
}

/**
 * What the members' rows of one object say together, for its status: the first member's error (naming the
 * member when `clustered`), and whether any member converged it yet.
 */
export function standingOf(
  rows: readonly MemberStatusRow[],
  clustered: boolean,
): { error: string | undefined; converged: boolean } {
  const failed = rows.find((r) => r.lastError);
  return {
    error: failed && (clustered ? `${failed.node}: ${failed.lastError}` : failed.lastError),
    converged: rows.some((r) => r.observedGeneration >= 1),
  };
}
