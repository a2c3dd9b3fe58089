/** What the observer runner's tests share: a runner on a manual clock, and a poll sample that can be held open. */
import { createManualClock } from '../reconcilers/runtime/clock.ts';
import { createDeferred, type Deferred } from '../reconcilers/runtime/deferred.ts';
import { createTestLogger } from '../reconcilers/runtime/test-logger.ts';
import { createObserverRunner } from './observer-runner.ts';

export function setup() {
  const clock = createManualClock(0);
  const log = createTestLogger();
  const runner = createObserverRunner({ clock, log });
  return { clock, log, runner };
}

/** A poll sample that records start times and can be held open. */
export function pollProbe(now: () => number) {
  const starts: number[] = [];
  const signals: AbortSignal[] = [];
  const held: Deferred<void>[] = [];
  let active = 0;
  let maxActive = 0;
  const probe = {
    starts,
    signals,
    hold: false,
    fail: false,
    get maxActive() {
      return maxActive;
    },
    releaseAll: () => held.splice(0).forEach((d) => d.resolve()),
    sample: async (signal: AbortSignal): Promise<void> => {
      starts.push(now());
      signals.push(signal);
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        if (probe.hold) {
          const d = createDeferred<void>();
          held.push(d);
          await d.promise;
        }
        if (probe.fail) throw new Error('sample broke');
      } finally {
        active--;
      }
    },
  };
  return probe;
}
