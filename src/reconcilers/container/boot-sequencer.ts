/**
 * Releases the containers to start at svcd start, by `boot.autostart.priority`: the containers of one priority
 * start together, at most `concurrency` at a time (what the host's cores can start at once); the next, lower
 * priority waits until every start of the group has converged or failed, then for the group's longest
 * `boot.autostart.delay`. Only groups wait for each other, as LXD's priority means. The reconciler asks
 * `mayStart` before powering a container up; containers that are not in the plan (created later, or already
 * running) may start at once. A container that fails to start does not hold the others up.
 */
export function createBootSequencer(deps: {
  order: { id: string; priority: number; delayMs: number }[];
  /** How many starts of one group run at once (at least 1). */
  concurrency: number;
  enqueue: (id: string) => void;
  /** Resolves when the container's start has converged or failed (bounded by the caller). */
  waitSettled: (id: string) => Promise<unknown>;
  sleep: (ms: number) => Promise<void>;
}) {
  const planned = new Set(deps.order.map((o) => o.id));
  const released = new Set<string>();
  let done = deps.order.length === 0;
  const concurrency = Math.max(1, Math.floor(deps.concurrency));
  const start = async (id: string) => {
    released.add(id);
    const settled = deps.waitSettled(id).catch(() => undefined);
    deps.enqueue(id);
    await settled;
  };
  return {
    mayStart: (id: string) => done || released.has(id) || !planned.has(id),
    async run(): Promise<void> {
      try {
        for (const group of groupsOf(deps.order)) {
          const waiting = [...group];
          const worker = async () => {
            for (let next = waiting.shift(); next; next = waiting.shift()) await start(next.id);
          };
          await Promise.all(Array.from({ length: Math.min(concurrency, group.length) }, worker));
          const delayMs = Math.max(0, ...group.map((o) => o.delayMs));
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

/** Runs of equal priority, in the plan's order (pure). */
function groupsOf<T extends { priority: number }>(order: T[]): T[][] {
  const groups: T[][] = [];
  for (const o of order) {
    const last = groups.at(-1);
    if (last && last[0]!.priority === o.priority) last.push(o);
    else groups.push([o]);
  }
  return groups;
}
