/**
 * Time source for the reconcile runtime. Everything that waits (backoff,
 * resync, timeouts, poll intervals) goes through a Clock so tests can drive
 * time by hand with the manual clock instead of sleeping.
 */

/** Opaque handle returned by {@link Clock.setTimer}. */
export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch (or since the manual clock's start). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds. */
  setTimer(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; unknown or already-fired handles are ignored. */
  clearTimer(h: TimerHandle): void;
}

/** Largest delay setTimeout accepts; larger values would fire after 1 ms. */
const MAX_TIMEOUT_MS = 2_147_483_647;

function clampDelay(ms: number): number {
  if (Number.isNaN(ms)) return 0;
  return Math.min(Math.max(0, ms), MAX_TIMEOUT_MS);
}

/**
 * Creates a clock backed by real timers. Timers are unref()'d, so a pending
 * retry or resync never keeps the process alive on its own.
 */
export function createSystemClock(): Clock {
  const timeouts = new WeakMap<TimerHandle, NodeJS.Timeout>();
  let nextId = 0;
  return {
    now: () => Date.now(),
    setTimer(fn, ms) {
      const handle: TimerHandle = Object.freeze({ id: ++nextId });
      const timeout = setTimeout(() => {
        timeouts.delete(handle);
        fn();
      }, clampDelay(ms));
      timeout.unref();
      timeouts.set(handle, timeout);
      return handle;
    },
    clearTimer(h) {
      const timeout = timeouts.get(h);
      if (timeout === undefined) return;
      clearTimeout(timeout);
      timeouts.delete(h);
    },
  };
}

/** The process-wide real clock. */
export const systemClock: Clock = createSystemClock();

/** A clock whose time only moves when a test calls {@link ManualClock.advance}. */
export interface ManualClock extends Clock {
  /**
   * Moves time forward by `ms`, firing due timers in time order (ties in
   * creation order). Pending promises are allowed to settle before the first
   * timer, between timers and at the end, so async work started by a timer
   * (and timers it schedules within the window) completes inside the call.
   */
  advance(ms: number): Promise<void>;
  /** Number of timers scheduled and not yet fired or cleared. */
  pendingTimers(): number;
}

interface ManualTimer {
  readonly dueAt: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** Macrotask turns to let promise chains (and nextTick/IO callbacks) run. */
const SETTLE_TURNS = 10;
/** Guard against a timer that reschedules itself with 0 ms forever. */
const MAX_FIRES_PER_ADVANCE = 100_000;

async function settle(): Promise<void> {
  for (let i = 0; i < SETTLE_TURNS; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

export function createManualClock(startMs = 0): ManualClock {
  const timers = new Map<TimerHandle, ManualTimer>();
  let now = startMs;
  let seq = 0;
  let advancing = false;

  function nextDue(limit: number): [TimerHandle, ManualTimer] | undefined {
    let best: [TimerHandle, ManualTimer] | undefined;
    for (const entry of timers) {
      const t = entry[1];
      if (t.dueAt > limit) continue;
      if (best === undefined || t.dueAt < best[1].dueAt || (t.dueAt === best[1].dueAt && t.seq < best[1].seq)) {
        best = entry;
      }
    }
    return best;
  }

  return {
    now: () => now,
    setTimer(fn, ms) {
      const handle: TimerHandle = Object.freeze({ id: ++seq });
      const delay = Number.isNaN(ms) ? 0 : Math.max(0, ms);
      timers.set(handle, { dueAt: now + delay, seq: handle.id, fn });
      return handle;
    },
    clearTimer(h) {
      timers.delete(h);
    },
    pendingTimers: () => timers.size,
    async advance(ms) {
      if (!(ms >= 0)) throw new RangeError(`advance(ms) needs ms >= 0, got ${ms}`);
      if (advancing) throw new Error('advance() is already in progress');
      advancing = true;
      try {
        const target = now + ms;
        await settle();
        for (let fired = 0; ; fired++) {
          if (fired >= MAX_FIRES_PER_ADVANCE) throw new Error('too many timers fired in one advance(); runaway timer?');
          const due = nextDue(target);
          if (due === undefined) break;
          timers.delete(due[0]);
          now = due[1].dueAt;
          due[1].fn();
          await settle();
        }
        now = target;
        await settle();
      } finally {
        advancing = false;
      }
    },
  };
}
