/** What the container reconciler asks of the boot order before, and while, it powers a container up. */
export interface BootGate {
  /** Whether the container may power up now: its wave's turn came, or it is not in the boot plan. */
  mayStart(id: string): boolean;
  /** Runs the container's `lxc-start`: for a container of the boot plan, at most `concurrency` at once. */
  start<T>(id: string, run: () => Promise<T>): Promise<T>;
}

/**
 * Releases the containers to start at svcd start, by `boot.autostart.priority`: the containers of one priority
 * are released together, and the next wave waits until every start of this one has converged or failed. A wave
 * ends where the priority changes, and after a container with a `boot.autostart.delay`: as in LXD, what follows
 * it in priority-then-name order waits that long after it started (not after a failed start, as LXD 5.0).
 * What bounds a wave is the host's part of a start: at most `concurrency` `lxc-start`s at once (`start`). svcd's
 * own part (config, rootfs, nics, the records) of the next ones goes on meanwhile, so the host is not left idle
 * between two starts: a wave is released a few at a time, the next one as soon as one is at its lxc-start. The
 * reconciler asks `mayStart` before it does anything for a container it would power up; containers that are not
 * in the plan (created later, or already running) may start at once and are not bounded. A container that fails
 * to start does not hold the others up.
 */
export function createBootSequencer(deps: {
  order: { id: string; priority: number; delayMs: number }[];
  /** How many `lxc-start`s of the boot run at once (at least 1). */
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
  /**
   * Containers of a wave released and still being prepared (not at their lxc-start yet): as many as start at
   * once, so the first ones are not slowed by the preparation of all the others, and the prepared ones queue for
   * a start slot.
   */
  const window = concurrency;
  let starting = 0;
  const slotWaiters: (() => void)[] = [];
  /** Released containers not at their lxc-start yet: called when one gets there (or settled without one). */
  const passing = new Map<string, () => void>();
  /** Released; `settled` resolves with whether it settled well, `past` once it is at its lxc-start or settled. */
  const release = (id: string) => {
    let passed!: () => void;
    const past = new Promise<void>((r) => (passed = r));
    passing.set(id, passed);
    released.add(id);
    const settled = deps.waitSettled(id).catch(() => false);
    void settled.then(() => passing.get(id)?.());
    deps.enqueue(id);
    return { settled, past };
  };
  return {
    mayStart: (id: string) => done || released.has(id) || !planned.has(id),
    async start<T>(id: string, run: () => Promise<T>): Promise<T> {
      if (done || !planned.has(id)) return run();
      passing.get(id)?.();
      while (starting >= concurrency) await new Promise<void>((r) => slotWaiters.push(r));
      starting++;
      try {
        return await run();
      } finally {
        starting--;
        slotWaiters.shift()?.();
      }
    },
    async run(): Promise<void> {
      try {
        for (const wave of wavesOf(deps.order)) {
          const waiting = [...wave];
          const settled = new Map<string, Promise<boolean>>();
          const feeder = async () => {
            for (let next = waiting.shift(); next; next = waiting.shift()) {
              const r = release(next.id);
              settled.set(next.id, r.settled);
              await r.past;
              passing.delete(next.id);
            }
          };
          await Promise.all(Array.from({ length: Math.min(window, wave.length) }, feeder));
          const outcomes = await Promise.all(wave.map((o) => settled.get(o.id)!));
          // Only a wave's last container can have a delay (the wave ends after it).
          const last = wave.at(-1)!;
          if (last.delayMs > 0 && outcomes.at(-1)) await deps.sleep(last.delayMs);
        }
      } finally {
        done = true;
        // Nothing else queues what the plan held: should the waves have stopped short, the rest goes now.
        for (const o of deps.order) if (!released.has(o.id)) deps.enqueue(o.id);
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
