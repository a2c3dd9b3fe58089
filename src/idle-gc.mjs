// @ts-check
/**
 * Memory back after a burst: V8 keeps the heap and young generation it grew to (hundreds of requests
 * and reconciles at once) long after the work is done. Once the process has been quiet for `quietMs`
 * after some activity, one full collection runs (a few ms, at a quiet moment), and it compacts: a plain
 * full GC frees the objects but leaves the pages they were scattered over committed (measured after a
 * 200-container churn: heapUsed back to 31 MiB, heapTotal still 115 MiB), so the flag that makes V8
 * evacuate every fragmented page is set for that one collection only. `activity()` is called per
 * request: two counters, nothing more. (Plain JavaScript: the node spawn helper used it too, until the
 * helper became a C program.)
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * @param {number} [quietMs] the length of a window
 * @param {{ quietBelow?: number; minActivity?: number }} [opts] a window is quiet with at most
 *   `quietBelow` activities (default 0; a caller may allow a steady trickle of background
 *   work); the collection runs at the end of a quiet window when at least `minActivity` (default 1)
 *   activities came before it since the last collection.
 * @returns {{ activity(): void; stop(): void }}
 */
export function createIdleGc(quietMs = 5_000, opts = {}) {
  const quietBelow = opts.quietBelow ?? 0;
  const minActivity = opts.minActivity ?? 1;
  setFlagsFromString('--expose-gc');
  const gc = /** @type {(() => void) | undefined} */ (runInNewContext('gc'));
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  let stopped = false;
  let sinceGc = 0;
  let inWindow = 0;
  const compactingGc = () => {
    if (!gc) return;
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
  const tick = () => {
    if (inWindow <= quietBelow && sinceGc - inWindow >= minActivity) {
      compactingGc();
      sinceGc = inWindow;
    }
    inWindow = 0;
    // Nothing since the last collection: no timer until the next activity.
    if (sinceGc === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  return {
    activity() {
      if (!gc || stopped) return;
      sinceGc++;
      inWindow++;
      if (!timer) {
        timer = setInterval(tick, quietMs);
        timer.unref();
      }
    },
    stop() {
      stopped = true;
      if (timer) clearInterval(timer);
    },
  };
}
