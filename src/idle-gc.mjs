// @ts-check
/**
 * Memory back after a burst: V8 keeps the heap and young generation it grew to (hundreds of requests
 * and reconciles at once) long after the work is done. Once the process has been quiet for `quietMs`
 * after some activity, one full collection runs (a few ms, at a quiet moment), and it compacts: a plain
 * full GC frees the objects but leaves the pages they were scattered over committed (measured after a
 * 200-container churn: heapUsed back to 31 MiB, heapTotal still 115 MiB), so the flag that makes V8
 * evacuate every fragmented page is set for that one collection only. `activity()` is called per
 * request (svcd) or per message (the spawn helper): a timer reset, nothing more.
 * Plain JavaScript so that the spawn helper, which runs without the TypeScript loader, uses it too.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** @param {number} [quietMs] @returns {{ activity(): void; stop(): void }} */
export function createIdleGc(quietMs = 5_000) {
  setFlagsFromString('--expose-gc');
  const gc = /** @type {(() => void) | undefined} */ (runInNewContext('gc'));
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  let stopped = false;
  const compactingGc = () => {
    if (!gc) return;
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
  return {
    activity() {
      if (!gc || stopped) return;
      if (timer) timer.refresh();
      else {
        timer = setTimeout(() => {
          timer = undefined;
          compactingGc();
        }, quietMs);
        timer.unref();
      }
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
