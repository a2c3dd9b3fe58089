import { computeBackoff, type BackoffOptions } from '../reconcilers/runtime/backoff.ts';
import type { Clock, TimerHandle } from '../reconcilers/runtime/clock.ts';
import { invoke } from '../reconcilers/runtime/invoke.ts';
import type { RuntimeLogger } from '../reconcilers/runtime/types.ts';
import type { ObserverLoop, StreamObserver } from './types.ts';

export interface StreamLoopDeps {
  clock: Clock;
  log: RuntimeLogger;
  observer: StreamObserver;
  /** Restart delay after the watcher ends or fails. */
  backoff: BackoffOptions;
  /** A run at least this long resets the restart backoff. */
  resetAfterMs: number;
}

interface Run {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

/**
 * Keeps a long-running watcher alive: whenever `run` resolves or rejects while
 * the loop is active it is restarted after capped exponential backoff; a run
 * that lasted `resetAfterMs` or more starts the backoff over.
 */
export function createStreamLoop(deps: StreamLoopDeps): ObserverLoop {
  const { clock, log, observer, backoff, resetAfterMs } = deps;
  let active = false;
  let failures = 0;
  let timer: TimerHandle | undefined;
  let current: Run | undefined;

  function ended(startedAt: number, err: unknown, errored: boolean): void {
    current = undefined;
    if (!active) {
      log.debug({ err }, 'stream observer ended after stop');
      return;
    }
    const ranForMs = clock.now() - startedAt;
    failures = ranForMs >= resetAfterMs ? 1 : failures + 1;
    const delay = computeBackoff(failures, backoff);
    const msg = errored ? 'stream observer failed; restarting' : 'stream observer ended; restarting';
    log.warn({ err, ranForMs, restarts: failures, restartInMs: delay }, msg);
    timer = clock.setTimer(launch, delay);
  }

  function launch(): void {
    timer = undefined;
    if (!active || current !== undefined) return;
    const controller = new AbortController();
    const startedAt = clock.now();
    log.debug({}, 'stream observer starting');
    current = {
      controller,
      done: invoke(() => observer.run(controller.signal)).then(
        () => ended(startedAt, undefined, false),
        (err: unknown) => ended(startedAt, err, true),
      ),
    };
  }

  return {
    start() {
      if (active) return Promise.resolve();
      active = true;
      failures = 0;
      launch();
      return Promise.resolve();
    },
    async stop() {
      active = false;
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
      const running = current;
      running?.controller.abort(new Error('observer runner stopping'));
      await running?.done;
    },
    async runNow() {
      // Running already: nothing to do. Waiting out a backoff: restart now.
      if (!active || current !== undefined || timer === undefined) return;
      clock.clearTimer(timer);
      launch();
    },
  };
}
