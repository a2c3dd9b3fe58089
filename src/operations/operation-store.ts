import { and, desc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { preparedPer } from '../db/prepared.ts';
import type { DbOrTx } from '../db/types.ts';
import { operations, type OperationRow } from '../desired/schema/index.ts';

export type NewOperation = typeof operations.$inferInsert;

const ACTIVE = sql`${operations.statusCode} < 200`;
const FINISHED = sql`${operations.statusCode} >= 200`;

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
  return settleConverged(db).execute({ kind, key, observed, now: now.toISOString() });
}
// Every convergence runs it (prepared.ts). `now` raw (ISO text): a placeholder in an update's set is SQL.
const settleConverged = preparedPer((db: DbOrTx) =>
  db
    .update(operations)
    .set({ statusCode: 200, updatedAt: sql`${sql.placeholder('now')}`, mayCancel: false })
    .where(
      and(
        eq(operations.targetKind, sql.placeholder('kind')),
        eq(operations.targetKey, sql.placeholder('key')),
        lte(operations.targetGeneration, sql.placeholder('observed')),
        ACTIVE,
      ),
    )
    .returning()
    .prepare('settle_converged_operations'),
);

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

/** Which operations name one of `urls` among their resources of `type` (e.g. containers). */
export interface ResourceFilter {
  type: string;
  urls: string[];
}

const namesResource = ({ type, urls }: ResourceFilter) =>
  or(...urls.map((u) => sql`${operations.resources} @> ${JSON.stringify({ [type]: [u] })}::jsonb`));

/** Finished operations of a project, the last to end first, at most `limit`; those naming a resource if asked. */
export async function listFinishedOperations(
  db: DbOrTx,
  project: string,
  opts: { limit: number; resource?: ResourceFilter | undefined },
): Promise<OperationRow[]> {
  const filters = [FINISHED, eq(operations.project, project)];
  if (opts.resource) filters.push(namesResource(opts.resource)!);
  return db
    .select()
    .from(operations)
    .where(and(...filters))
    .orderBy(desc(operations.updatedAt), desc(operations.id))
    .limit(opts.limit);
}

/**
 * Delete finished operations last updated before `before` (any member's), and those of `keep.node`
 * beyond its `keep.count` last to end: what is kept is bounded in time and, per member, in number.
 */
export async function pruneOperations(
  db: DbOrTx,
  before: Date,
  keep?: { node: string; count: number },
): Promise<number> {
  const old = and(FINISHED, lt(operations.updatedAt, before));
  const beyond = keep
    ? inArray(
        operations.id,
        db
          .select({ id: operations.id })
          .from(operations)
          .where(and(FINISHED, eq(operations.node, keep.node)))
          .orderBy(desc(operations.updatedAt), desc(operations.id))
          .offset(keep.count),
      )
    : undefined;
  const rows = await db
    .delete(operations)
    .where(beyond ? or(old, beyond) : old)
    .returning({ id: operations.id });
  return rows.length;
}
