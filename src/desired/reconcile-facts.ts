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

/** Facts a reconciler keeps about the host (e.g. where a volume's data lives). */
export async function readFacts(db: Db, kind: string, key: string): Promise<Record<string, unknown>> {
  const memory = memoryOf(db);
  const known = memory?.get(factsKey(kind, key));
  if (known !== undefined) return JSON.parse(known) as Record<string, unknown>;
  const [row] = await db
    .select({ facts: reconcileStatus.facts })
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
  const facts = row?.facts ?? {};
  memory?.set(factsKey(kind, key), JSON.stringify(facts));
  return facts;
}

export async function writeFacts(db: Db, kind: string, key: string, facts: Record<string, unknown>): Promise<void> {
  const memory = memoryOf(db);
  memory?.delete(factsKey(kind, key));
  await db
    .insert(reconcileStatus)
    .values({ kind, key, facts, updatedAt: new Date() })
    .onConflictDoUpdate({ target: [reconcileStatus.kind, reconcileStatus.key], set: { facts, updatedAt: new Date() } });
  memory?.set(factsKey(kind, key), JSON.stringify(facts));
}

/**
 * Forget what is remembered of a key's facts: after its status row was deleted (in a transaction of
 * `db`), or when its object is gone for good.
 */
export function forgetFacts(db: DbOrTx, kind: string, key: string): void {
  memoryOf(db)?.delete(factsKey(kind, key));
}

/**
 * Record that (kind, key) converged to `observedGeneration` (its last error cleared), and its facts when
 * given, in one write.
 */
export async function recordConverged(db: Db, kind: string, key: string, observedGeneration: number, facts?: Record<string, unknown>): Promise<void> {
  const memory = facts && memoryOf(db);
  memory?.delete(factsKey(kind, key));
  const updatedAt = new Date();
  await db
    .insert(reconcileStatus)
    .values({ kind, key, observedGeneration, lastError: '', terminal: false, updatedAt, ...(facts ? { facts } : {}) })
    .onConflictDoUpdate({
      target: [reconcileStatus.kind, reconcileStatus.key],
      set: { observedGeneration: sql`greatest(${reconcileStatus.observedGeneration}, ${observedGeneration})`, lastError: '', terminal: false, updatedAt, ...(facts ? { facts } : {}) },
    });
  memory?.set(factsKey(kind, key), JSON.stringify(facts));
}
