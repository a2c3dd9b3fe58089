/**
 * Writes of a "latest time" stamp (an image's last_used_at) per key, merged while one is in flight: at most
 * one write per key runs, and the callers that arrive meanwhile share the next one, which writes the latest
 * stamp they asked for. Each caller resolves once a write that started after its call (so its stamp, or a
 * later one) has finished, and rejects with that write's error.
 *
 * Why: 200 creates from one image at once updated its one row 200 times. On a PostgreSQL server each update
 * held the row's lock until its commit, so they ran one after the other; each also notified svcd's data
 * version channel (its commit then waited for every other notifying commit of the server, which PostgreSQL
 * serialises), and each bumped the images version that the next create's cached image lookup is kept under.
 */
export interface LatestStampWriter {
  /** Record `at` for `key`; resolves once a write of `at` or a later stamp has finished. */
  touch(key: string, at: Date): Promise<void>;
}

interface Pending {
  at: Date;
  done: Promise<void>;
}

export function createLatestStampWriter(write: (key: string, at: Date) => Promise<void>): LatestStampWriter {
  /** Per key: the write in flight, and the merged one waiting for it. */
  const running = new Map<string, Promise<void>>();
  const waiting = new Map<string, Pending>();

  function start(key: string, at: Date): Promise<void> {
    const run = write(key, at);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    running.set(key, settled);
    void settled.then(() => {
      if (running.get(key) === settled) running.delete(key);
    });
    return run;
  }

  return {
    touch(key, at) {
      const inFlight = running.get(key);
      if (!inFlight) return start(key, at);
      const queued = waiting.get(key);
      if (queued) {
        if (at > queued.at) queued.at = at;
        return queued.done;
      }
      const pending: Pending = { at, done: Promise.resolve() };
      pending.done = inFlight.then(() => {
        waiting.delete(key);
        return start(key, pending.at);
      });
      waiting.set(key, pending);
      return pending.done;
    },
  };
}
