/**
 * Test support shared by the host simulators: counts calls by name, and makes a chosen call throw once
 * (a crash halfway through a reconcile).
 */
export interface SimCalls {
  /** How many times each method was called (also the ones that threw). */
  readonly calls: Record<string, number>;
  /** A later call of `method` (the next one, or the one after `skip` more) throws `error` (default: a transient Error naming it), once. */
  failOnce(method: string, opts?: { error?: Error; skip?: number }): void;
  /** Count a call, and throw if a failure was planted for it. */
  enter(method: string): void;
}

export function createSimCalls(what: string): SimCalls {
  const calls: Record<string, number> = {};
  const planted = new Map<string, { error: Error; skip: number }>();
  return {
    calls,
    failOnce(method, opts = {}) {
      planted.set(method, {
        error: opts.error ?? new Error(`${what}: simulated failure of ${method}`),
        skip: opts.skip ?? 0,
      });
    },
    enter(method) {
      calls[method] = (calls[method] ?? 0) + 1;
      const p = planted.get(method);
      if (!p) return;
      if (p.skip-- > 0) return;
      planted.delete(method);
      throw p.error;
    },
  };
}
