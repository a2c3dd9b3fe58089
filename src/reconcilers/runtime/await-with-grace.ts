import type { Clock, TimerHandle } from './clock.ts';
import { invoke } from './invoke.ts';

export interface AwaitWithGraceDeps {
  clock: Clock;
  /** Once this aborts, the run gets `graceMs` to settle before being abandoned. */
  signal: AbortSignal;
  graceMs: number;
}

/** Thrown when a run ignored its abort signal for longer than the grace period. */
export class AbandonedRunError extends Error {
  override name = 'AbandonedRunError';
}

/**
 * Runs `run()` and settles with its outcome. If `signal` aborts and the run
 * has not settled `graceMs` later, rejects with {@link AbandonedRunError} so a
 * run that ignores its signal cannot block shutdown or its key forever.
 * A synchronous throw from `run` becomes a rejection.
 */
export function awaitWithGrace<T>(run: () => Promise<T>, deps: AwaitWithGraceDeps): Promise<T> {
  const { clock, signal, graceMs } = deps;
  const work = invoke(run);
  return new Promise<T>((resolve, reject) => {
    let graceTimer: TimerHandle | undefined;
    const onAbort = (): void => {
      graceTimer = clock.setTimer(() => {
        reject(new AbandonedRunError(`run did not settle within ${graceMs}ms after abort`));
      }, graceMs);
    };
    const cleanup = (): void => {
      signal.removeEventListener('abort', onAbort);
      if (graceTimer !== undefined) clock.clearTimer(graceTimer);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (err: unknown) => {
        cleanup();
        reject(err);
      },
    );
  });
}
