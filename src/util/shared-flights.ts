/**
 * One run of a task per key at a time, shared by every caller that asks for the key while it runs (a
 * download that 50 concurrent launches wait for). Each caller waits with its own abort signal: one that
 * gives up stops waiting at once, and the run itself is aborted only when every caller waiting on it has
 * given up, so one cancelled request never fails the others.
 */
export function createSharedFlights<T>() {
  interface Flight {
    done: Promise<T>;
    waiters: number;
    abort: AbortController;
    settled: boolean;
  }
  const flights = new Map<string, Flight>();
  return {
    /** Run `task` for `key` unless a run is under way (then wait for that one); `leader` says which. */
    async run(
      key: string,
      signal: AbortSignal,
      task: (signal: AbortSignal) => Promise<T>,
    ): Promise<{ value: T; leader: boolean }> {
      let flight = flights.get(key);
      const leader = !flight;
      if (!flight) {
        const abort = new AbortController();
        const f: Flight = { done: Promise.resolve().then(() => task(abort.signal)), waiters: 0, abort, settled: false };
        void f.done.then(
          () => ((f.settled = true), flights.delete(key)),
          () => ((f.settled = true), flights.delete(key)),
        );
        flights.set(key, f);
        flight = f;
      }
      const f = flight;
      f.waiters++;
      let onAbort: (() => void) | undefined;
      try {
        const value = await new Promise<T>((resolve, reject) => {
          if (signal.aborted) return reject(signal.reason as Error);
          onAbort = () => reject(signal.reason as Error);
          signal.addEventListener('abort', onAbort, { once: true });
          f.done.then(resolve, reject);
        });
        return { value, leader };
      } finally {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        if (--f.waiters === 0 && !f.settled) f.abort.abort(signal.reason ?? new Error('nobody waits for it any more'));
      }
    },
    /** Runs under way (for tests and diagnostics). */
    get size() {
      return flights.size;
    },
  };
}
