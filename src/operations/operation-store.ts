import { and, desc, eq, isNull, lt, lte, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { operations, type OperationRow } from '../desired/schema/index.ts';

export type NewOperation = typeof operations.$inferInsert;

const ACTIVE = sql`${operations.statusCode} < 200`;

export async function insertOperation(db: DbOrTx, row: NewOperation): Promise<OperationRow> {
  const [out] = await db.insert(operations).values(row).returning();
  return out!;
}

/** Insert several rows in one statement. */
export async function insertOperations(db: DbOrTx, rows: NewOperation[]): Promise<void> {
  await db.insert(operations).values(rows);
}

export async function readOperation(db: DbOrTx, id: string): Promise<OperationRow | undefined> {
  const [row] = await db.select().from(operations).where(eq(operations.id, id));
  return row;
}

/** Running or queued operations, newest first; all projects when project is undefined. */
export async function listActiveOperations(db: DbOrTx, project?: string): Promise<OperationRow[]> {
  const where = project === undefined ? ACTIVE : and(ACTIVE, eq(operations.project, project));
  return db.select().from(operations).where(where).orderBy(desc(operations.createdAt));
}

/** Move a non-final operation to `statusCode`; returns the updated row, or undefined if it was already final. */
export async function transitionOperation(
  db: DbOrTx,
  id: string,
  patch: { statusCode: number; err?: string; metadata?: Record<string, unknown>; mayCancel?: boolean },
  now: Date,
): Promise<OperationRow | undefined> {
  const [row] = await db
    .update(operations)
    .set({ ...patch, updatedAt: now })
    .where(and(eq(operations.id, id), ACTIVE))
    .returning();
  return row;
}

/** Settle every active operation of (kind, key) whose target generation is <= observed. */
export async function settleConvergedOperations(
  db: DbOrTx,
  kind: string,
  key: string,
  observed: number,
  now: Date,
): Promise<OperationRow[]> {
  return db
    .update(operations)
    .set({ statusCode: 200, updatedAt: now, mayCancel: false })
    .where(
      and(
        eq(operations.targetKind, kind),
        eq(operations.targetKey, key),
        lte(operations.targetGeneration, observed),
        ACTIVE,
      ),
    )
    .returning();
}

/** Fail every active operation waiting on (kind, key). */
export async function failTargetOperations(
  db: DbOrTx,
  kind: string,
  key: string,
  err: string,
  now: Date,
): Promise<OperationRow[]> {
  return db
    .update(operations)
    .set({ statusCode: 400, err, updatedAt: now, mayCancel: false })
    .where(and(eq(operations.targetKind, kind), eq(operations.targetKey, key), ACTIVE))
    .returning();
}

/** Fail active operations whose deadline passed. */
export async function expireOperations(db: DbOrTx, now: Date): Promise<OperationRow[]> {
  return db
    .update(operations)
    .set({
      statusCode: 400,
      updatedAt: now,
      mayCancel: false,
      // Name the reconciler's last error, if any: that is why it did not converge.
      err: sql`'timed out waiting for the host to converge (svcd keeps trying in the background)' || coalesce(
        (select ': ' || rs.last_error from reconcile_status rs
          where rs.kind = ${operations.targetKind} and rs.key = ${operations.targetKey} and rs.last_error <> ''), '')`,
    })
    .where(and(ACTIVE, lt(operations.deadlineAt, now)))
    .returning();
}

/** At start: operations of this node that no reconcile can settle (no target) end as Failure. */
export async function failOrphanedOperations(
  db: DbOrTx,
  node: string,
  err: string,
  now: Date,
): Promise<OperationRow[]> {
  return db
    .update(operations)
    .set({ statusCode: 400, err, updatedAt: now, mayCancel: false })
    .where(and(ACTIVE, eq(operations.node, node), isNull(operations.targetKind)))
    .returning();
}

/** Delete finished operations last updated before `before`. */
export async function pruneOperations(db: DbOrTx, before: Date): Promise<number> {
  const rows = await db
    .delete(operations)
    .where(and(sql`${operations.statusCode} >= 200`, lt(operations.updatedAt, before)))
    .returning({ id: operations.id });
  return rows.length;
}
