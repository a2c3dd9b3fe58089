import type { Clock, TimerHandle } from './clock.ts';

/**
 * A work queue keyed by (kind, key), modelled on client-go's workqueue:
 * a key waiting to run is coalesced, a key added while it runs is marked dirty
 * and runs exactly once more afterwards, one key never runs twice at once, and
 * different keys run concurrently up to `concurrency`.
 */

export interface QueueItem {
  readonly kind: string;
  readonly key: string;
  readonly reason: string;
}

export interface KeyedQueueDeps {
  clock: Clock;
  /** Max number of keys processed at once (>= 1). */
  concurrency: number;
  /** Processes one item. Should not throw; if it does, `onError` is told. */
  process: (item: QueueItem) => Promise<void>;
  /** Called when `process` rejects; defaults to ignoring the error. */
  onError?: (err: unknown, item: QueueItem) => void;
}

export interface KeyedQueue {
  /** Queue now. Coalesces with a waiting entry (the first reason wins) and cancels a delayed add of the key. */
  add(kind: string, key: string, reason: string): void;
  /** Queue after `delayMs`; an earlier-due delayed add of the same key wins over a later-due one. */
  addAfter(kind: string, key: string, delayMs: number, reason: string): void;
  /** Drops a pending delayed add of the key, if any. */
  cancelDelayed(kind: string, key: string): void;
  /** Keys waiting to be processed (including dirty keys that are running now). */
  size(): number;
  /** Number of pending delayed adds. */
  delayedCount(): number;
  /** Resolves when nothing is waiting, processing or dirty (delayed adds don't count). */
  idle(): Promise<void>;
  /** Stops accepting work, drops waiting items and timers, and waits for in-flight runs. */
  shutdown(): Promise<void>;
}

interface Delayed {
  readonly dueAt: number;
  readonly handle: TimerHandle;
}

function idOf(kind: string, key: string): string {
  return `${kind}\u0000${key}`;
}

export function createKeyedQueue(deps: KeyedQueueDeps): KeyedQueue {
  const { clock, concurrency, process } = deps;
  const onError = deps.onError ?? (() => {});
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  }

  /** The dirty set: every key that must be processed (again), with its item. */
  const waiting = new Map<string, QueueItem>();
  /** Ids in `waiting` that are not processing, in FIFO order. */
  const ready: string[] = [];
  const processing = new Set<string>();
  const inflight = new Set<Promise<void>>();
  const delayed = new Map<string, Delayed>();
  let idleWaiters: Array<() => void> = [];
  let closed = false;
  let pumpScheduled = false;
  let shutdownPromise: Promise<void> | undefined;

  const isIdle = (): boolean => waiting.size === 0 && processing.size === 0;

  function notifyIdle(): void {
    if (!isIdle() || idleWaiters.length === 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function reportError(err: unknown, item: QueueItem): void {
    try {
      onError(err, item);
    } catch {
      // An error handler that throws must not turn into an unhandled rejection.
    }
  }

  function finish(id: string, run: Promise<void>): void {
    inflight.delete(run);
    processing.delete(id);
    if (!closed && waiting.has(id)) ready.push(id);
    pump();
    notifyIdle();
  }

  function startRun(id: string, item: QueueItem): void {
    processing.add(id);
    const run: Promise<void> = Promise.resolve()
      .then(() => process(item))
      .catch((err: unknown) => reportError(err, item))
      .then(() => finish(id, run));
    inflight.add(run);
  }

  function pump(): void {
    while (!closed && processing.size < concurrency && ready.length > 0) {
      const id = ready.shift() as string;
      const item = waiting.get(id);
      if (item === undefined) continue;
      waiting.delete(id);
      startRun(id, item);
    }
  }

  /** Starts work on a microtask, so adds made in the same tick coalesce into one run. */
  function schedulePump(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    queueMicrotask(() => {
      pumpScheduled = false;
      pump();
    });
  }

  function cancelDelayedId(id: string): void {
    const d = delayed.get(id);
    if (d === undefined) return;
    clock.clearTimer(d.handle);
    delayed.delete(id);
  }

  function add(kind: string, key: string, reason: string): void {
    if (closed) return;
    const id = idOf(kind, key);
    cancelDelayedId(id);
    if (waiting.has(id)) return;
    waiting.set(id, { kind, key, reason });
    if (!processing.has(id)) ready.push(id);
    schedulePump();
  }

  function addAfter(kind: string, key: string, delayMs: number, reason: string): void {
    if (closed) return;
    if (!(delayMs > 0)) {
      add(kind, key, reason);
      return;
    }
    const id = idOf(kind, key);
    const dueAt = clock.now() + delayMs;
    const existing = delayed.get(id);
    if (existing !== undefined) {
      if (existing.dueAt <= dueAt) return;
      clock.clearTimer(existing.handle);
    }
    const handle = clock.setTimer(() => {
      if (delayed.get(id)?.handle !== handle) return;
      delayed.delete(id);
      add(kind, key, reason);
    }, delayMs);
    delayed.set(id, { dueAt, handle });
  }

  return {
    add,
    addAfter,
    cancelDelayed: (kind, key) => cancelDelayedId(idOf(kind, key)),
    size: () => waiting.size,
    delayedCount: () => delayed.size,
    idle() {
      if (isIdle()) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    shutdown() {
      if (shutdownPromise !== undefined) return shutdownPromise;
      closed = true;
      for (const d of delayed.values()) clock.clearTimer(d.handle);
      delayed.clear();
      waiting.clear();
      ready.length = 0;
      shutdownPromise = Promise.all([...inflight]).then(() => notifyIdle());
      return shutdownPromise;
    },
  };
}
