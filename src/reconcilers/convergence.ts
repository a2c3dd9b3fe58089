import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { reconcileStatus } from '../desired/schema/index.ts';

export type ConvergenceOutcome = { ok: true } | { ok: false; error: string; terminal: boolean };

/**
 * Lets a synchronous API call (pool create, volume create...) wait until the reconciler converged
 * the generation it just wrote, or failed trying. The settler calls `notify` after recording the outcome.
 */
export function createConvergence({ db }: { db: Db }) {
  const waiters = new Map<string, Set<(o: { observed?: number; error?: string; terminal?: boolean }) => void>>();
  const id = (kind: string, key: string) => `${kind}\u0000${key}`;
  return {
    notify(kind: string, key: string, o: { observed?: number; error?: string; terminal?: boolean }): void {
      for (const w of [...(waiters.get(id(kind, key)) ?? [])]) w(o);
    },
    /** Resolve when observed ≥ generation, or at the first reconcile failure after the call, or after timeoutMs. */
    async wait(kind: string, key: string, generation: number, timeoutMs = 120_000): Promise<ConvergenceOutcome> {
      const k = id(kind, key);
      const set = waiters.get(k) ?? new Set();
      waiters.set(k, set);
      let done!: (o: ConvergenceOutcome) => void;
      const result = new Promise<ConvergenceOutcome>((r) => (done = r));
      const waiter = (o: { observed?: number; error?: string; terminal?: boolean }) => {
        if (o.error !== undefined) done({ ok: false, error: o.error, terminal: !!o.terminal });
        else if ((o.observed ?? 0) >= generation) done({ ok: true });
      };
      set.add(waiter);
      const timer = setTimeout(() => done({ ok: false, error: 'timed out waiting for the host to converge', terminal: false }), timeoutMs);
      try {
        // It may have converged before we started listening.
        const [row] = await db
          .select()
          .from(reconcileStatus)
          .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
        if (row && row.observedGeneration >= generation) done({ ok: true });
        return await result;
      } finally {
        clearTimeout(timer);
        set.delete(waiter);
        if (set.size === 0) waiters.delete(k);
      }
    },
  };
}
export type Convergence = ReturnType<typeof createConvergence>;
