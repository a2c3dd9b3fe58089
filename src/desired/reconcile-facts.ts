import { and, eq, inArray, sql } from 'drizzle-orm';
import { databaseStateOf, type RowMemory } from '../db/database-state.ts';
import { excluded, preparedPer } from '../db/prepared.ts';
import type { Db, DbOrTx } from '../db/types.ts';
import { reconcileStatus } from './schema/index.ts';

/**
 * Facts as this process last read or wrote them (JSON), when it is the database's only writer
 * (PGlite, Database.localWrites): every write of facts goes through writeFacts or forgetFacts, so a
 * reconcile needs no read of them. On a shared PostgreSQL they are always read. The memory is the
 * database's own (DatabaseState.facts, database-state.ts).
 */
const memoryOf = (db: DbOrTx): RowMemory | undefined => databaseStateOf(db)?.facts;
const factsKey = (kind: string, key: string) => `${kind}\0${key}`;
const touch = (memory: RowMemory, k: string) => memory.touchedDuringLoad?.add(k);

/** Run `write` (of a key's facts) keeping memory true: unknown while it runs and if it fails, `facts` after. */
async function writeThrough(
  db: Db,
  k: string,
  facts: Record<string, unknown>,
  write: () => Promise<unknown>,
): Promise<void> {
  const memory = memoryOf(db);
  if (!memory) return void (await write());
  memory.values.delete(k);
  touch(memory, k);
  memory.unsure.add(k);
  await write();
  memory.unsure.delete(k);
  memory.values.set(k, JSON.stringify(facts));
}

/**
 * On PGlite, read every key's facts into memory once (at start): a reconcile of a new object then
 * needs no read to learn it has none. Elsewhere nothing.
 */
export async function preloadFacts(db: Db): Promise<void> {
  const memory = memoryOf(db);
  if (!memory || memory.complete) return;
  const touched = new Set<string>();
  memory.touchedDuringLoad = touched;
  try {
    const rows = await db
      .select({ kind: reconcileStatus.kind, key: reconcileStatus.key, facts: reconcileStatus.facts })
      .from(reconcileStatus);
    for (const r of rows) {
      const k = factsKey(r.kind, r.key);
      if (!touched.has(k) && !memory.values.has(k)) memory.values.set(k, JSON.stringify(r.facts ?? {}));
    }
    memory.complete = true;
  } finally {
    memory.touchedDuringLoad = undefined;
  }
}

/** Facts a reconciler keeps about the host (e.g. where a volume's data lives). */
export async function readFacts(db: Db, kind: string, key: string): Promise<Record<string, unknown>> {
  const memory = memoryOf(db);
  const known = memory?.values.get(factsKey(kind, key));
  if (known !== undefined) return JSON.parse(known) as Record<string, unknown>;
  if (memory?.complete && !memory.unsure.has(factsKey(kind, key))) return {};
  const [row] = await db
    .select({ facts: reconcileStatus.facts })
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
  const facts = row?.facts ?? {};
  if (memory && !memory.unsure.has(factsKey(kind, key))) memory.values.set(factsKey(kind, key), JSON.stringify(facts));
  return facts;
}

export async function writeFacts(db: Db, kind: string, key: string, facts: Record<string, unknown>): Promise<void> {
  await writeThrough(db, factsKey(kind, key), facts, () =>
    db
      .insert(reconcileStatus)
      .values({ kind, key, facts, updatedAt: new Date() })
      .onConflictDoUpdate({
        target: [reconcileStatus.kind, reconcileStatus.key],
        set: { facts, updatedAt: new Date() },
      }),
  );
}

/**
 * Forget what is remembered of a key's facts: after its status row was deleted (in a transaction of
 * `db`), or when its object is gone for good.
 */
export function forgetFacts(db: DbOrTx, kind: string, key: string): void {
  const memory = memoryOf(db);
  if (!memory) return;
  memory.values.delete(factsKey(kind, key));
  touch(memory, factsKey(kind, key));
  memory.unsure.delete(factsKey(kind, key));
}

/** The upsert of a convergence (prepared.ts: every convergence runs it), with or without the facts. */
const convergedUpsert = (withFacts: boolean) =>
  preparedPer((db: Db) =>
    db
      .insert(reconcileStatus)
      .values({
        kind: sql.placeholder('kind'),
        key: sql.placeholder('key'),
        observedGeneration: sql.placeholder('observedGeneration'),
        lastError: '',
        terminal: false,
        updatedAt: sql.placeholder('updatedAt'),
        ...(withFacts ? { facts: sql.placeholder('facts') } : {}),
      })
      .onConflictDoUpdate({
        target: [reconcileStatus.kind, reconcileStatus.key],
        set: {
          observedGeneration: sql`greatest(${reconcileStatus.observedGeneration}, ${excluded(reconcileStatus.observedGeneration)})`,
          lastError: '',
          terminal: false,
          updatedAt: excluded(reconcileStatus.updatedAt),
          ...(withFacts ? { facts: excluded(reconcileStatus.facts) } : {}),
        },
      })
      .prepare(withFacts ? 'converged_with_facts' : 'converged'),
  );
const converged = convergedUpsert(false);
const convergedWithFacts = convergedUpsert(true);

/**
 * Record that (kind, key) converged to `observedGeneration` (its last error cleared), and its facts when
 * given, in one write.
 */
export async function recordConverged(
  db: Db,
  kind: string,
  key: string,
  observedGeneration: number,
  facts?: Record<string, unknown>,
): Promise<void> {
  const values = { kind, key, observedGeneration, updatedAt: new Date() };
  const write = () => (facts ? convergedWithFacts(db).execute({ ...values, facts }) : converged(db).execute(values));
  if (facts) await writeThrough(db, factsKey(kind, key), facts, write);
  else await write();
}

/** Record a failed reconcile of (kind, key): its error, and whether a retry can help. */
export async function recordFailed(
  db: Db,
  kind: string,
  key: string,
  message: string,
  terminal: boolean,
): Promise<void> {
  await db
    .insert(reconcileStatus)
    .values({ kind, key, lastError: message, terminal, updatedAt: new Date() })
    .onConflictDoUpdate({
      target: [reconcileStatus.kind, reconcileStatus.key],
      set: { lastError: message, terminal, updatedAt: new Date() },
    });
}

/** Delete (kind, key)'s status row, in the caller's transaction if it has one; the caller forgets its facts (forgetFacts). */
export async function deleteStatusRow(db: DbOrTx, kind: string, key: string): Promise<void> {
  await db.delete(reconcileStatus).where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
}

/**
 * Delete the status rows of `kinds` and return them (member-status.ts: kinds that became one row per member
 * take an earlier svcd's shared rows at start). Forgets nothing: called before the facts are preloaded.
 */
export async function takeStatusRowsOfKinds(tx: DbOrTx, kinds: readonly string[]) {
  return tx
    .delete(reconcileStatus)
    .where(inArray(reconcileStatus.kind, [...kinds]))
    .returning();
}
