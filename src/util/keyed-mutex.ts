/**
 * Mutual exclusion per key inside this process: `run(key, fn)` starts `fn` once every earlier `fn` of the
 * same key has settled (resolved or rejected); different keys run concurrently. Keys are forgotten when idle.
 */
export function createKeyedMutex() {
  const tails = new Map<string, Promise<unknown>>();
  return {
    async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
      const prev = tails.get(key) ?? Promise.resolve();
      const mine = prev.catch(() => {}).then(fn);
      tails.set(key, mine);
      try {
        return await mine;
      } finally {
        if (tails.get(key) === mine) tails.delete(key);
      }
    },
    /** Whether `key` has work running or waiting. */
    busy: (key: string) => tails.has(key),
    /** Keys with work running or waiting (for tests). */
    get size() {
      return tails.size;
    },
  };
}
export type KeyedMutex = ReturnType<typeof createKeyedMutex>;
