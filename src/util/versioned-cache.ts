/**
 * Values per key, each kept with the version of what it was read from: a get with the version the
 * value was read at returns it (concurrent gets of one key and version share one read), any other
 * version reads again. A failed read is not kept. At most `maxKeys` are kept; the longest
 * unrefreshed goes first. Values are shared: callers must not change them.
 */
export interface VersionedCache<T> {
  get(key: string, version: string, read: () => PromiseLike<T>): Promise<T>;
  /** The value kept for `key` at `version` (perhaps still being read), or undefined: reads nothing. */
  peek(key: string, version: string): Promise<T> | undefined;
}

export function createVersionedCache<T>(maxKeys: number): VersionedCache<T> {
  const entries = new Map<string, { version: string; value: Promise<T> }>();
  return {
    peek(key, version) {
      const hit = entries.get(key);
      return hit && hit.version === version ? hit.value : undefined;
    },
    get(key, version, read) {
      const hit = entries.get(key);
      if (hit && hit.version === version) return hit.value;
      // Resolved once: a drizzle query is a thenable that runs again each time it is awaited.
      const value = Promise.resolve(read());
      entries.delete(key);
      if (entries.size >= maxKeys) entries.delete(entries.keys().next().value!);
      entries.set(key, { version, value });
      value.catch(() => {
        if (entries.get(key)?.value === value) entries.delete(key);
      });
      return value;
    },
  };
}

/**
 * A versioned cache whose version and read are fixed: `version()` is read first, on every get, and
 * `read(key)` runs when it changed since the key's value was read.
 */
export function createVersionedReads<T>(
  version: () => Promise<string>,
  read: (key: string) => Promise<T>,
  maxKeys = 64,
) {
  const cache = createVersionedCache<T>(maxKeys);
  return {
    get: async (key: string): Promise<T> => cache.get(key, await version(), () => read(key)),
    /** The value of `key` if the cache has it at the current version; else undefined (nothing is read). */
    peek: async (key: string): Promise<T | undefined> => cache.peek(key, await version()),
  };
}
