export { AbandonedRunError, awaitWithGrace, type AwaitWithGraceDeps } from './await-with-grace.ts';
export { computeBackoff, type BackoffOptions } from './backoff.ts';
export {
  createManualClock,
  createSystemClock,
  systemClock,
  type Clock,
  type ManualClock,
  type TimerHandle,
} from './clock.ts';
export { createKeyedQueue, type KeyedQueue, type KeyedQueueDeps, type QueueItem } from './keyed-queue.ts';
export {
  createReconcileManager,
  type KeyStatus,
  type ReconcileManager,
  type ReconcileManagerDeps,
} from './reconcile-manager.ts';
export { invoke } from './invoke.ts';
export { createWatchFanout, type KindKey, type Watch } from './watches.ts';
export { isTerminalError, terminalMessageOf, TerminalError } from './terminal-error.ts';
export type { ReconcileContext, ReconcileResult, Reconciler, RemoveRows, RuntimeLogger, Settler } from './types.ts';
