import { sql } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { reconcileStatus } from '../desired/schema/index.ts';
import type { Operations } from '../operations/index.ts';
import type { Settler } from './runtime/index.ts';

/**
 * The reconcile manager's settler: records how far each object converged (reconcile_status) and
 * settles the operations waiting on it.
 */
export function createStatusSettler({ db, ops }: { db: Db; ops: Pick<Operations, 'converged' | 'failed'> }): Settler {
  return {
    async converged(kind, key, observedGeneration) {
      await db
        .insert(reconcileStatus)
        .values({ kind, key, observedGeneration, lastError: '', terminal: false, updatedAt: new Date() })
        .onConflictDoUpdate({
          target: [reconcileStatus.kind, reconcileStatus.key],
          set: { observedGeneration: sql`greatest(${reconcileStatus.observedGeneration}, ${observedGeneration})`, lastError: '', terminal: false, updatedAt: new Date() },
        });
      await ops.converged(kind, key, observedGeneration);
    },
    async failed(kind, key, message, terminal) {
      await db
        .insert(reconcileStatus)
        .values({ kind, key, lastError: message, terminal, updatedAt: new Date() })
        .onConflictDoUpdate({ target: [reconcileStatus.kind, reconcileStatus.key], set: { lastError: message, terminal, updatedAt: new Date() } });
      await ops.failed(kind, key, message, terminal);
    },
  };
}
