import type { Db } from '../db/types.ts';
import { isTerminalError, type Reconciler, type ReconcileResult } from '../reconcilers/runtime/index.ts';
import { createStatusSettler } from '../reconcilers/status-settler.ts';

/**
 * Test support: run one reconcile of a key as the reconcile manager does (its result settled through the
 * real status settler, so the facts handed with a convergence are written), without queue or retries. `node`:
 * the member whose pools and networks it settles (the reconcilers' own `node`).
 */
export function createReconcileOnce(db: Db, node = 'n1') {
  const settler = createStatusSettler({ db, node, ops: { convergedIn: async () => () => {}, failed: async () => {} } });
  return async function reconcileOnce(r: Reconciler, key: string): Promise<ReconcileResult> {
    const ctx = { kind: r.kind, key, attempt: 0, signal: new AbortController().signal, reason: 'test' };
    try {
      const res = await r.reconcile(key, ctx);
      if (res.observedGeneration !== undefined)
        await settler.converged(r.kind, key, res.observedGeneration, res.facts, res.gone, res.removeRows);
      res.afterSettle?.();
      // What a test compares: the settlement's hooks are spent.
      const { removeRows: _rows, afterSettle: _after, ...rest } = res;
      return rest;
    } catch (e) {
      await settler.failed(r.kind, key, (e as Error).message, isTerminalError(e));
      throw e;
    }
  };
}
