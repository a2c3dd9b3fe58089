/** The reconcile manager's surface: what it is made from, what it offers, and a key's failure bookkeeping. */
import type { BackoffOptions } from './backoff.ts';
import type { Clock } from './clock.ts';
import type { ResyncPassResult } from './resync-pass.ts';
import type { Reconciler, RuntimeLogger, Settler } from './types.ts';
import type { Watch } from './watches.ts';

export interface ReconcileManagerDeps {
  clock: Clock;
  reconcilers: readonly Reconciler[];
  settler: Settler;
  log: RuntimeLogger;
  /** Keys reconciled at once across all kinds (default 4). */
  concurrency?: number;
  /** Retry backoff after transient failures (default 500 ms .. 60 s). */
  backoff?: BackoffOptions;
  /** How long a startup tier may take before the next one is queued anyway (default 10 s). */
  startupTierTimeoutMs?: number;
  /** Period of the full resync of every key (default 5 min). */
  resyncIntervalMs?: number;
  /** A run taking longer is aborted and counts as a transient failure (default 10 min). */
  reconcileTimeoutMs?: number;
  /** How long an aborted run may take to settle before it is abandoned (default 30 s). */
  abortGraceMs?: number;
  /** Kinds others depend on: when a key of one converges, what it maps to is queued at once (watches.ts). */
  watches?: readonly Watch[];
}

export interface KeyStatus {
  /** Consecutive transient failures (0 after a terminal failure). */
  failures: number;
  lastError?: string;
  /** Clock time of the scheduled retry, if one is scheduled. */
  nextRetryAt?: number;
}

export interface ReconcileManager {
  /** Startup sweep of every kind's keys, then periodic resync. */
  start(): Promise<void>;
  /** A full resync pass now (the periodic one early): resolves when every key listed has run once; rejects while one is under way. */
  resync(reason: string): Promise<ResyncPassResult>;
  /** Queues a key (API desired writes, observer drift). Throws for an unknown kind. */
  enqueue(kind: string, key: string, reason: string): void;
  /**
   * Queues a key after `delayMs` on the clock (an observer's backoff, e.g. a crash loop): it runs
   * then without any poll. An earlier-due delayed add of the key wins; any run of the key before
   * then decides what comes next and drops it. Throws for an unknown kind.
   */
  enqueueAfter(kind: string, key: string, delayMs: number, reason: string): void;
  /** Stops timers, aborts in-flight runs and waits for them. */
  stop(): Promise<void>;
  /** Resolves when no key is waiting or running (delayed retries don't count). */
  idle(): Promise<void>;
  /** Failure bookkeeping for a key; undefined when none is recorded (never failed, or succeeded since). */
  status(kind: string, key: string): KeyStatus | undefined;
}
