import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { isMemberScoped, readMemberStatus } from '../desired/member-status.ts';
import { reconcileStatus } from '../desired/schema/index.ts';

export type ConvergenceOutcome = { ok: true } | { ok: false; error: string; terminal: boolean };

/**
 * Lets a synchronous API call (pool create, volume create...) wait until the reconciler converged
 * the generation it just wrote, or failed trying. The settler calls `notify` after recording the outcome.
 */
export function createConvergence({ db, node }: { db: Db; node: string }) {
  /** How far (kind, key) converged here: a pool's or network's own row of this member. */
  const observedHere = async (kind: string, key: string) => {
    if (isMemberScoped(kind)) return (await readMemberStatus(db, node, kind, key))?.observedGeneration;
    const [row] = await db
      .select()
      .from(reconcileStatus)
      .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
    return row?.observedGeneration;
  };
  const waiters = new Map<string, Set<(o: { observed?: number; error?: string; terminal?: boolean }) => void>>();
  const id = (kind: string, key: string) => `${kind}\u0000${key}`;
  return {
    notify(kind: string, key: string, o: { observed?: number; error?: string; terminal?: boolean }): void {
      for (const w of [...(waiters.get(id(kind, key)) ?? [])]) w(o);
    },
    /**
     * Resolve when observed ≥ generation, or at the first reconcile failure after the call, or after timeoutMs.
     * `retriesMs`: a failure the reconciler retries (not terminal) is waited through for that long from the call,
     * and answered then if nothing converged meanwhile (a terminal one at once).
     */
    async wait(
      kind: string,
      key: string,
      generation: number,
      timeoutMs = 120_000,
      opts: { retriesMs?: number } = {},
    ): Promise<ConvergenceOutcome> {
      const k = id(kind, key);
      const set = waiters.get(k) ?? new Set();
      waiters.set(k, set);
      let done!: (o: ConvergenceOutcome) => void;
      const result = new Promise<ConvergenceOutcome>((r) => (done = r));
      const since = Date.now();
      const retriesMs = opts.retriesMs ?? 0;
      /** The last failure waited through, answered when the retries' time is up. */
      let failed: ConvergenceOutcome | undefined;
      let retriesUp: ReturnType<typeof setTimeout> | undefined;
      const waiter = (o: { observed?: number; error?: string; terminal?: boolean }) => {
        if (o.error === undefined) {
          if ((o.observed ?? 0) >= generation) done({ ok: true });
          return;
        }
        const outcome = { ok: false as const, error: o.error, terminal: !!o.terminal };
        const left = retriesMs - (Date.now() - since);
        if (o.terminal || left <= 0) return done(outcome);
        failed = outcome;
        retriesUp ??= setTimeout(() => done(failed!), left);
      };
      set.add(waiter);
      const timer = setTimeout(
        () => done(failed ?? { ok: false, error: 'timed out waiting for the host to converge', terminal: false }),
        timeoutMs,
      );
      try {
        // It may have converged before we started listening.
        if (((await observedHere(kind, key)) ?? -1) >= generation) done({ ok: true });
        return await result;
      } finally {
        clearTimeout(timer);
        clearTimeout(retriesUp);
        set.delete(waiter);
        if (set.size === 0) waiters.delete(k);
      }
    },
    /**
     * Watch a key from before a write whose generation is known only once it committed: a convergence
     * noted since the watch began counts, so there is no window between the commit and the wait, and no
     * read of reconcile_status. `until` resolves when observed ≥ generation, or at a failure after it was
     * called (with `terminalOnly`, only a terminal one: the reconciler retries the others, as an
     * operation waits through them), or on timeout (negative: none) or abort. Always `close()` it.
     */
    watch(kind: string, key: string): ConvergenceWatch {
      const k = id(kind, key);
      const set = waiters.get(k) ?? new Set();
      waiters.set(k, set);
      let observed = -1;
      let onNote: ((o: Note) => void) | undefined;
      const waiter = (o: Note) => {
        if (o.observed !== undefined) observed = Math.max(observed, o.observed);
        onNote?.(o);
      };
      set.add(waiter);
      const close = () => {
        set.delete(waiter);
        if (set.size === 0 && waiters.get(k) === set) waiters.delete(k);
      };
      return {
        close,
        until(generation, opts = {}) {
          if (observed >= generation) return Promise.resolve({ ok: true });
          return new Promise<ConvergenceOutcome>((resolve) => {
            const timeoutMs = opts.timeoutMs ?? -1;
            const timer =
              timeoutMs >= 0
                ? setTimeout(
                    () => finish({ ok: false, error: 'timed out waiting for the host to converge', terminal: false }),
                    timeoutMs,
                  )
                : undefined;
            const aborted = () => finish({ ok: false, error: 'the request was aborted', terminal: false });
            const finish = (o: ConvergenceOutcome) => {
              onNote = undefined;
              clearTimeout(timer);
              opts.signal?.removeEventListener('abort', aborted);
              resolve(o);
            };
            if (opts.signal?.aborted) return aborted();
            opts.signal?.addEventListener('abort', aborted, { once: true });
            onNote = (o) => {
              if (o.error !== undefined && (o.terminal || !opts.terminalOnly))
                finish({ ok: false, error: o.error, terminal: !!o.terminal });
              else if (observed >= generation) finish({ ok: true });
            };
          });
        },
      };
    },
  };
}

type Note = { observed?: number; error?: string; terminal?: boolean };

export interface ConvergenceWatch {
  until(
    generation: number,
    opts?: { terminalOnly?: boolean; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<ConvergenceOutcome>;
  close(): void;
}
export type Convergence = ReturnType<typeof createConvergence>;
