/**
 * Releases the containers to start at svcd start, by `boot.autostart.priority`: the containers of one priority
 * start together, at most `concurrency` at a time (what the host's cores can start at once), and the next wave
 * waits until every start of this one has converged or failed. A wave ends where the priority changes, and after
 * a container with a `boot.autostart.delay`: as in LXD, what follows it in priority-then-name order waits that
 * long after it started (not after a failed start, as LXD 5.0). The reconciler asks `mayStart` before powering a
 * container up; containers that are not in the plan (created later, or already running) may start at once. A
 * container that fails to start does not hold the others up.
 */
export function createBootSequencer(deps: {
  order: { id: string; priority: number; delayMs: number }[];
  /** How many starts of one group run at once (at least 1). */
  concurrency: number;
  enqueue: (id: string) => void;
  /** Resolves when the container's start has converged (true) or failed (false), bounded by the caller. */
  waitSettled: (id: string) => Promise<boolean>;
  sleep: (ms: number) => Promise<void>;
}) {
  const planned = new Set(deps.order.map((o) => o.id));
  const released = new Set<string>();
  let done = deps.order.length === 0;
  const concurrency = Math.max(1, Math.floor(deps.concurrency));
  const start = async (id: string): Promise<boolean> => {
    released.add(id);
    const settled = deps.waitSettled(id).catch(() => false);
    deps.enqueue(id);
    return settled;
  };
  return {
    mayStart: (id: string) => done || released.has(id) || !planned.has(id),
    async run(): Promise<void> {
      try {
        for (const wave of wavesOf(deps.order)) {
          const waiting = [...wave];
          const started = new Set<string>();
          const worker = async () => {
            for (let next = waiting.shift(); next; next = waiting.shift())
              if (await start(next.id)) started.add(next.id);
          };
          await Promise.all(Array.from({ length: Math.min(concurrency, wave.length) }, worker));
          // Only a wave's last container can have a delay (the wave ends after it).
          const last = wave.at(-1)!;
          if (last.delayMs > 0 && started.has(last.id)) await deps.sleep(last.delayMs);
        }
      } finally {
        done = true;
      }
    },
    isDone: () => done,
  };
}
export type BootSequencer = ReturnType<typeof createBootSequencer>;

/** Runs of equal priority in the plan's order, each also ending after a container with a delay (pure). */
export function wavesOf<T extends { priority: number; delayMs: number }>(order: T[]): T[][] {
  const waves: T[][] = [];
  for (const o of order) {
    const last = waves.at(-1);
    if (last && last[0]!.priority === o.priority && last.at(-1)!.delayMs === 0) last.push(o);
    else waves.push([o]);
  }
  return waves;
}
