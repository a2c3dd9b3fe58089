/**
 * A value read at most once per `ttlMs` (concurrent callers share one read); `invalidate()` after a
 * local write. The TTL bounds staleness for writes made by other cluster members.
 */
export function createMemo<T>(read: () => Promise<T>, ttlMs: number, now: () => number = Date.now) {
  let value: { v: T; at: number } | undefined;
  let pending: Promise<T> | undefined;
  return {
    async get(): Promise<T> {
      if (value && now() - value.at < ttlMs) return value.v;
      pending ??= read()
        .then((v) => {
          value = { v, at: now() };
          return v;
        })
        .finally(() => {
          pending = undefined;
        });
      return pending;
    },
    invalidate(): void {
      value = undefined;
    },
  };
}
