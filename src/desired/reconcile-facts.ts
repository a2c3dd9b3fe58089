import { and, eq, sql } from 'drizzle-orm';
import { localWrites } from '../db/local-writes.ts';
import type { Db, DbOrTx } from '../db/types.ts';
import { reconcileStatus } from './schema/index.ts';

/**
 * Facts as this process last read or wrote them (JSON), when it is the database's only writer
 * (PGlite, local-writes.ts): every write of facts goes through writeFacts or forgetFacts, so a
 * reconcile needs no read of them. On a shared PostgreSQL they are always read.
 */
const remembered = new WeakMap<object, Map<string, string>>();
function memoryOf(db: DbOrTx): Map<string, string> | undefined {
  if (!localWrites(db)) return undefined;
  let m = remembered.get(db);
  if (!m) remembered.set(db, (m = new Map()));
  return m;
}
const factsKey = (kind: string, key: string) => `${kind}\0${key}`;
/** Databases whose every row's facts are in memory (preloadFacts): a key not there has none. */
const complete = new WeakSet<object>();
/** Keys written or forgotten while a preload reads, which it must not overwrite. */
const touchedDuringLoad = new WeakMap<object, Set<string>>();
const touch = (db: DbOrTx, k: string) => touchedDuringLoad.get(db)?.add(k);
/** Keys whose facts are being written, or whose write failed: read from the database, not assumed none. */
const unsure = new WeakMap<object, Set<string>>();
function unsureOf(db: DbOrTx): Set<string> {
  let u = unsure.get(db);
  if (!u) unsure.set(db, (u = new Set()));
  return u;
}

/** Run `write` (of a key's facts) keeping memory true: unknown while it runs and if it fails, `facts` after. */
async function writeThrough(db: Db, k: string, facts: Record<string, unknown>, write: () => Promise<unknown>): Promise<void> {
  const memory = memoryOf(db);
  if (!memory) return void (await write());
  memory.delete(k);
  touch(db, k);
  unsureOf(db).add(k);
  await write();
  unsureOf(db).delete(k);
  memory.set(k, JSON.stringify(facts));
}

/**
 * On PGlite, read every key's facts into memory once (at start): a reconcile of a new object then
 * needs no read to learn it has none. Elsewhere nothing.
 */
export async function preloadFacts(db: Db): Promise<void> {
  const memory = memoryOf(db);
  if (!memory || complete.has(db)) return;
  const touched = new Set<string>();
  touchedDuringLoad.set(db, touched);
  try {
    const rows = await db.select({ kind: reconcileStatus.kind, key: reconcileStatus.key, facts: reconcileStatus.facts }).from(reconcileStatus);
    for (const r of rows) {
      const k = factsKey(r.kind, r.key);
      if (!touched.has(k) && !memory.has(k)) memory.set(k, JSON.stringify(r.facts ?? {}));
    }
    complete.add(db);
  } finally {
    touchedDuringLoad.delete(db);
  }
}

/** Facts a reconciler keeps about the host (e.g. where a volume's data lives). */
export async function readFacts(db: Db, kind: string, key: string): Promise<Record<string, unknown>> {
  const memory = memoryOf(db);
  const known = memory?.get(factsKey(kind, key));
  if (known !== undefined) return JSON.parse(known) as Record<string, unknown>;
  if (complete.has(db) && !unsure.get(db)?.has(factsKey(kind, key))) return {};
  const [row] = await db
    .select({ facts: reconcileStatus.facts })
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
  const facts = row?.facts ?? {};
  if (memory && !unsure.get(db)?.has(factsKey(kind, key))) memory.set(factsKey(kind, key), JSON.stringify(facts));
  return facts;
}

export async function writeFacts(db: Db, kind: string, key: string, facts: Record<string, unknown>): Promise<void> {
  await writeThrough(db, factsKey(kind, key), facts, () =>
    db
      .insert(reconcileStatus)
      .values({ kind, key, facts, updatedAt: new Date() })
      .onConflictDoUpdate({ target: [reconcileStatus.kind, reconcileStatus.key], set: { facts, updatedAt: new Date() } }),
  );
}

/**
 * Forget what is remembered of a key's facts: after its status row was deleted (in a transaction of
 * `db`), or when its object is gone for good.
 */
export function forgetFacts(db: DbOrTx, kind: string, key: string): void {
  memoryOf(db)?.delete(factsKey(kind, key));
  touch(db, factsKey(kind, key));
  unsure.get(db)?.delete(factsKey(kind, key));
}

/**
 * Record that (kind, key) converged to `observedGeneration` (its last error cleared), and its facts when
 * given, in one write.
 */
export async function recordConverged(db: Db, kind: string, key: string, observedGeneration: number, facts?: Record<string, unknown>): Promise<void> {
  const updatedAt = new Date();
  const write = () =>
    db
      .insert(reconcileStatus)
      .values({ kind, key, observedGeneration, lastError: '', terminal: false, updatedAt, ...(facts ? { facts } : {}) })
      .onConflictDoUpdate({
        target: [reconcileStatus.kind, reconcileStatus.key],
        set: { observedGeneration: sql`greatest(${reconcileStatus.observedGeneration}, ${observedGeneration})`, lastError: '', terminal: false, updatedAt, ...(facts ? { facts } : {}) },
      });
  if (facts) await writeThrough(db, factsKey(kind, key), facts, write);
  else await write();
}

/** Record a failed reconcile of (kind, key): its error, and whether a retry can help. */
export async function recordFailed(db: Db, kind: string, key: string, message: string, terminal: boolean): Promise<void> {
  await db
    .insert(reconcileStatus)
    .values({ kind, key, lastError: message, terminal, updatedAt: new Date() })
    .onConflictDoUpdate({ target: [reconcileStatus.kind, reconcileStatus.key], set: { lastError: message, terminal, updatedAt: new Date() } });
}

/** Delete (kind, key)'s status row, in the caller's transaction if it has one; the caller forgets its facts (forgetFacts). */
export async function deleteStatusRow(db: DbOrTx, kind: string, key: string): Promise<void> {
  await db.delete(reconcileStatus).where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
}
