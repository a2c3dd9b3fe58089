/**
 * Memory back after a burst: V8 keeps the heap and young generation it grew to (hundreds of requests
 * and reconciles at once) long after the work is done. Once the API has been quiet for `quietMs` after
 * some activity, one full collection runs (a few ms, at a quiet moment) and the heap shrinks to what
 * is live. `activity()` is called per request: a timer reset, nothing more.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function createIdleGc(quietMs = 5_000): { activity(): void; stop(): void } {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  return {
    activity() {
      if (!gc || stopped) return;
      if (timer) timer.refresh();
      else {
        timer = setTimeout(() => {
          timer = undefined;
          gc();
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
