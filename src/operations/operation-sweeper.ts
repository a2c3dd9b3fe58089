import type { Clock } from '../reconcilers/runtime/clock.ts';

export interface OperationSweeperDeps {
  clock: Clock;
  intervalMs: number;
  /** One sweep; a failure is logged and the next one comes all the same. */
  sweep(): Promise<void>;
  log: { warn(o: object, m?: string): void };
}

/** Runs `sweep` every `intervalMs` (after the previous one has finished) between start and stop. */
export function createOperationSweeper({ clock, intervalMs, sweep, log }: OperationSweeperDeps) {
  let timer: ReturnType<Clock['setTimer']> | undefined;
  let stopped = false;
  return {
    start(): void {
      stopped = false;
      const tick = () => {
        sweep()
          .catch((e: unknown) => log.warn({ err: e }, 'operation sweep failed'))
          .finally(() => {
            if (!stopped) timer = clock.setTimer(tick, intervalMs);
          });
      };
      timer = clock.setTimer(tick, intervalMs);
    },
    stop(): void {
      stopped = true;
      if (timer) clock.clearTimer(timer);
    },
  };
}
