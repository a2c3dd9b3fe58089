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

/**
 * Values per key, recomputed only when `version()` (read first, on every get) has changed since they
 * were read; concurrent gets of one key and version share one read. `maxKeys` bounds the memory.
 */
export function createVersionedCache<T>(version: () => Promise<string>, read: (key: string) => Promise<T>, maxKeys = 64) {
  const entries = new Map<string, { version: string; value: Promise<T> }>();
  return {
    async get(key: string): Promise<T> {
      const v = await version();
      const hit = entries.get(key);
      if (hit && hit.version === v) return hit.value;
      const value = read(key);
      entries.delete(key);
      if (entries.size >= maxKeys) entries.delete(entries.keys().next().value!);
      entries.set(key, { version: v, value });
      // a failed read is not kept
      value.catch(() => {
        if (entries.get(key)?.value === value) entries.delete(key);
      });
      return value;
    },
  };
}
