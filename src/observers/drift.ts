export interface DriftReporterDeps {
  enqueue(kind: string, key: string, reason: string): void;
}

export interface DriftReporter {
  /** Enqueues the key with reason `drift: <what>`; identical reports in the same tick enqueue once. */
  report(kind: string, key: string, what: string): void;
}

export function createDriftReporter({ enqueue }: DriftReporterDeps): DriftReporter {
  const seen = new Set<string>();
  return {
    report(kind, key, what) {
      const id = `${kind}\u0000${key}\u0000${what}`;
      if (seen.has(id)) return;
      enqueue(kind, key, `drift: ${what}`);
      if (seen.size === 0) queueMicrotask(() => seen.clear());
      seen.add(id);
    },
  };
}
