export interface DriftReporterDeps {
  enqueue(kind: string, key: string, reason: string): void;
  /** Enqueue once `delayMs` has passed (on the reconcile manager's clock). */
  enqueueAfter?(kind: string, key: string, delayMs: number, reason: string): void;
}

export interface DriftReporter {
  /** Enqueues the key with reason `drift: <what>`; identical reports in the same tick enqueue once. */
  report(kind: string, key: string, what: string): void;
  /** Drift to act on after `delayMs` (a backoff): enqueued then, with no poll needed; at once when `delayMs` <= 0. */
  reportAfter(kind: string, key: string, delayMs: number, what: string): void;
}

export function createDriftReporter({ enqueue, enqueueAfter }: DriftReporterDeps): DriftReporter {
  const seen = new Set<string>();
  const reporter: DriftReporter = {
    report(kind, key, what) {
      const id = `${kind}\u0000${key}\u0000${what}`;
      if (seen.has(id)) return;
      enqueue(kind, key, `drift: ${what}`);
      if (seen.size === 0) queueMicrotask(() => seen.clear());
      seen.add(id);
    },
    reportAfter(kind, key, delayMs, what) {
      if (!(delayMs > 0) || !enqueueAfter) return reporter.report(kind, key, what);
      enqueueAfter(kind, key, delayMs, `drift: ${what}`);
    },
  };
  return reporter;
}
