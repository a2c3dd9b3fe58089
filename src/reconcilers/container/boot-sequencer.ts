/**
 * Releases containers to start one after another at svcd start (boot.autostart.priority order,
 * boot.autostart.delay after each). The reconciler asks `mayStart` before powering a container up;
 * containers that are not in the plan (created later, or already running) may start at once.
 * A container that fails to start does not hold the others up.
 */
export function createBootSequencer(deps: {
  order: { id: string; delayMs: number }[];
  enqueue: (id: string) => void;
  /** Resolves when the container's start has converged or failed (bounded by the caller). */
  waitSettled: (id: string) => Promise<unknown>;
  sleep: (ms: number) => Promise<void>;
}) {
  const planned = new Set(deps.order.map((o) => o.id));
  const released = new Set<string>();
  let done = deps.order.length === 0;
  return {
    mayStart: (id: string) => done || released.has(id) || !planned.has(id),
    async run(): Promise<void> {
      try {
        for (const { id, delayMs } of deps.order) {
          released.add(id);
          const settled = deps.waitSettled(id).catch(() => undefined);
          deps.enqueue(id);
          await settled;
          if (delayMs > 0) await deps.sleep(delayMs);
        }
      } finally {
        done = true;
      }
    },
    isDone: () => done,
  };
}
export type BootSequencer = ReturnType<typeof createBootSequencer>;
