import type { OperationRow } from '../desired/schema/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import { isFinalStatus } from './status.ts';

/** How often a wait reads the operation again, for changes made by other cluster members. */
const REPOLL_MS = 2_000;

/** Waits for operations to end: woken by each announced change of theirs, and re-polling. */
export function createOperationWaiters({ clock }: { clock: Clock }) {
  const waiters = new Map<string, Set<() => void>>();

  /** Wake every wait on this operation (it changed): each reads it again. */
  function wake(id: string): void {
    const set = waiters.get(id);
    if (set) for (const done of [...set]) done();
  }

  /**
   * Listen for the next change of the operation from now on, so that a change announced while the
   * caller reads the row is not missed: `until(ms)` resolves on that change, after `ms`, or on abort;
   * `stop()` stops listening.
   */
  function listen(id: string, signal?: AbortSignal) {
    const set = waiters.get(id) ?? new Set();
    waiters.set(id, set);
    let timer: ReturnType<Clock['setTimer']> | undefined;
    let fired = false;
    let resolve!: () => void;
    const changed = new Promise<void>((r) => (resolve = r));
    const done = () => {
      fired = true;
      set.delete(done);
      if (set.size === 0 && waiters.get(id) === set) waiters.delete(id);
      if (timer) clock.clearTimer(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    set.add(done);
    signal?.addEventListener('abort', done, { once: true });
    return {
      until(ms: number): Promise<void> {
        if (!fired) timer = clock.setTimer(done, ms);
        return changed;
      },
      stop: done,
    };
  }

  /**
   * Resolve with the row (`read`) once the operation is final, or after timeoutMs (negative = no
   * limit), or on abort.
   */
  async function wait(
    read: () => Promise<OperationRow>,
    id: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<OperationRow> {
    const deadline = timeoutMs < 0 ? Infinity : clock.now() + timeoutMs;
    for (;;) {
      const change = listen(id, signal);
      let row: OperationRow;
      try {
        row = await read();
      } catch (e) {
        change.stop();
        throw e;
      }
      if (isFinalStatus(row.statusCode) || clock.now() >= deadline || signal?.aborted) {
        change.stop();
        return row;
      }
      await change.until(Math.min(REPOLL_MS, deadline - clock.now()));
    }
  }

  return { wake, wait };
}
export type OperationWaiters = ReturnType<typeof createOperationWaiters>;
