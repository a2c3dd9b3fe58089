import type { RuntimeLogger } from './types.ts';

/** A key of some kind: what a watch asks to reconcile. */
export interface KindKey {
  kind: string;
  key: string;
}

/**
 * Reconcilers that depend on another kind (as controller-runtime maps a watched kind to requests of
 * another): when a key of `kind` converges, the keys `map` names are reconciled again at once,
 * instead of waiting for their backoff (e.g. the containers and volumes on a storage pool).
 */
export interface Watch {
  kind: string;
  /** What depends on `key` (of `kind`) now. */
  map(key: string): Promise<KindKey[]>;
}

export interface WatchFanoutDeps {
  watches: readonly Watch[];
  /** Queue a mapped key (deduplicated by the keyed queue). */
  enqueue(kind: string, key: string, reason: string): void;
  log: RuntimeLogger;
}

/**
 * When to wake a watched key's dependents: after a successful run that converged to a generation
 * this process has not seen converge yet (the first, or a change), or that followed a failure.
 */
export function createWatchFanout(deps: WatchFanoutDeps) {
  const byKind = new Map<string, Watch[]>();
  for (const w of deps.watches) byKind.set(w.kind, [...(byKind.get(w.kind) ?? []), w]);
  /** The generation each watched key last converged to (in this process). */
  const converged = new Map<string, number>();
  const idOf = (kind: string, key: string) => `${kind}\u0000${key}`;

  return {
    kinds: () => [...byKind.keys()],
    /** A run of (kind, key) succeeded (and its convergence was recorded); `recovered`: it had been failing. */
    async succeeded(
      kind: string,
      key: string,
      observedGeneration: number | undefined,
      recovered: boolean,
    ): Promise<void> {
      const watches = byKind.get(kind);
      if (!watches) return;
      const id = idOf(kind, key);
      if (observedGeneration === undefined) return void converged.delete(id);
      const changed = converged.get(id) !== observedGeneration;
      converged.set(id, observedGeneration);
      if (!changed && !recovered) return;
      const reason = `watch: ${kind} ${key} ${recovered ? 'recovered' : 'converged'}`;
      for (const w of watches) {
        let mapped: KindKey[];
        try {
          mapped = await w.map(key);
        } catch (err) {
          deps.log.error({ err, kind, key }, 'watch mapping failed; dependents wait for their own retry');
          continue;
        }
        for (const m of mapped) {
          try {
            deps.enqueue(m.kind, m.key, reason);
          } catch (err) {
            deps.log.error({ err, kind: m.kind, key: m.key }, 'watch mapped to a key that cannot be queued');
          }
        }
        deps.log.debug({ kind, key, dependents: mapped.length }, 'dependents enqueued');
      }
    },
  };
}
