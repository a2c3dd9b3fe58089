import type { BackoffOptions } from '../reconcilers/runtime/backoff.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import type { RuntimeLogger } from '../reconcilers/runtime/types.ts';
import { createPollLoop } from './poll-loop.ts';
import { createStreamLoop } from './stream-loop.ts';
import type { Observer, ObserverLoop } from './types.ts';

export interface ObserverRunnerDeps {
  clock: Clock;
  log: RuntimeLogger;
  /** Restart backoff for stream observers (default 1 s .. 30 s). */
  streamBackoff?: BackoffOptions;
  /** A stream run at least this long resets its backoff (default 60 s). */
  streamResetAfterMs?: number;
}

export interface ObserverRunner {
  /** Adds an observer; names must be unique. Registered while started, it starts at once. */
  register(observer: Observer): void;
  /** Starts every registered observer, but those that wait for the startup reconcile (`afterStartup`). */
  start(): void;
  /**
   * The startup reconcile is done: the observers that waited for it start (now, or at `start`). Resolves once their
   * first looks are done, so that what the API shows first is what they found.
   */
  startupDone(): Promise<void>;
  /** Stops timers, aborts running samples/watchers and waits for them. */
  stop(): Promise<void>;
  /**
   * Poll: samples now (or right after a running sample) and resolves when
   * done; sample errors are logged, not thrown. Stream: if waiting out a
   * restart backoff, restarts now. Rejects for an unknown name or when the
   * runner is not started. Nothing for an observer that waits for startupDone.
   */
  runNow(name: string): Promise<void>;
}

export function createObserverRunner(deps: ObserverRunnerDeps): ObserverRunner {
  const { clock, log } = deps;
  const streamBackoff = deps.streamBackoff ?? { baseMs: 1_000, maxMs: 30_000 };
  const streamResetAfterMs = deps.streamResetAfterMs ?? 60_000;
  const loops = new Map<string, ObserverLoop>();
  /** The observers whose first look waits for the startup reconcile. */
  const afterStartup = new Set<string>();
  let started = false;
  let startedUp = false;
  const waits = (name: string) => !startedUp && afterStartup.has(name);

  function createLoop(observer: Observer): ObserverLoop {
    const olog = log.child?.({ observer: observer.name }) ?? log;
    switch (observer.kind) {
      case 'poll':
        return createPollLoop({ clock, log: olog, observer });
      case 'stream':
        return createStreamLoop({
          clock,
          log: olog,
          observer,
          backoff: streamBackoff,
          resetAfterMs: streamResetAfterMs,
        });
    }
  }

  return {
    register(observer) {
      if (loops.has(observer.name)) throw new Error(`observer already registered: ${observer.name}`);
      const loop = createLoop(observer);
      loops.set(observer.name, loop);
      if (observer.kind === 'poll' && observer.afterStartup) afterStartup.add(observer.name);
      if (started && !waits(observer.name)) void loop.start();
    },
    start() {
      if (started) return;
      started = true;
      log.info({ observers: [...loops.keys()] }, 'observers starting');
      for (const [name, loop] of loops) if (!waits(name)) void loop.start();
    },
    async startupDone() {
      if (startedUp) return;
      const waiting = [...loops].filter(([name]) => waits(name));
      startedUp = true;
      if (started) await Promise.all(waiting.map(([, loop]) => loop.start()));
    },
    async stop() {
      started = false;
      startedUp = false;
      await Promise.all([...loops.values()].map((loop) => loop.stop()));
    },
    async runNow(name) {
      const loop = loops.get(name);
      if (loop === undefined) throw new Error(`unknown observer: ${name}`);
      if (!started) throw new Error(`observer runner is not started (runNow ${name})`);
      // Its first look comes at startupDone, and sees the change then.
      if (waits(name)) return;
      await loop.runNow();
    },
  };
}
