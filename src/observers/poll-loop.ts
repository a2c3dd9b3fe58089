import type { Clock, TimerHandle } from '../reconcilers/runtime/clock.ts';
import { invoke } from '../reconcilers/runtime/invoke.ts';
import type { RuntimeLogger } from '../reconcilers/runtime/types.ts';
import type { ObserverLoop, PollObserver } from './types.ts';

export interface PollLoopDeps {
  clock: Clock;
  log: RuntimeLogger;
  observer: PollObserver;
}

interface Sample {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

/**
 * Runs a poll observer at start and then every `intervalMs` (fixed rate).
 * Samples never overlap: a tick that finds a sample still running is skipped.
 * A failing sample is logged and does not stop later ticks.
 */
export function createPollLoop(deps: PollLoopDeps): ObserverLoop {
  const { clock, log, observer } = deps;
  if (!(observer.intervalMs > 0)) {
    throw new RangeError(`poll observer ${observer.name}: intervalMs must be > 0, got ${observer.intervalMs}`);
  }
  let active = false;
  let timer: TimerHandle | undefined;
  let current: Sample | undefined;
  let rerun: Promise<void> | undefined;

  function sampleOnce(): Promise<void> {
    const controller = new AbortController();
    const startedAt = clock.now();
    const sample: Sample = {
      controller,
      done: invoke(() => observer.sample(controller.signal)).then(
        () => {
          if (current === sample) current = undefined;
          log.debug({ tookMs: clock.now() - startedAt }, 'sample done');
        },
        (err: unknown) => {
          if (current === sample) current = undefined;
          log.warn({ err, tookMs: clock.now() - startedAt }, 'sample failed');
        },
      ),
    };
    current = sample;
    return sample.done;
  }

  function tick(): void {
    timer = undefined;
    if (!active) return;
    timer = clock.setTimer(tick, observer.intervalMs);
    if (current !== undefined) {
      log.debug({}, 'previous sample still running; tick skipped');
      return;
    }
    void sampleOnce();
  }

  return {
    start() {
      if (active) return Promise.resolve();
      active = true;
      tick();
      return current?.done ?? Promise.resolve();
    },
    async stop() {
      active = false;
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
      const running = current;
      running?.controller.abort(new Error('observer runner stopping'));
      await running?.done;
      await rerun;
    },
    runNow() {
      if (current === undefined) return sampleOnce();
      // A sample is running (it may predate the caller's change): run one
      // more right after it; concurrent callers share that extra sample.
      rerun ??= current.done.then(() => {
        rerun = undefined;
        return active && current === undefined ? sampleOnce() : current?.done;
      });
      return rerun;
    },
  };
}
