/** What a reconciler gets for one run. */
export interface ReconcileContext {
  kind: string;
  key: string;
  /** Consecutive transient failures before this run; 0 for the first try after a success. */
  attempt: number;
  /** Aborted when the run times out or the manager stops. */
  signal: AbortSignal;
  /** Why the key was queued: 'startup', 'resync', 'retry', 'requeue', 'drift: ...', or a caller's reason. */
  reason: string;
}

export interface ReconcileResult {
  /** Desired generation now converged; undefined if the object is gone / nothing to settle. */
  observedGeneration?: number;
  /** Ask to be called again later even on success (e.g. polling a slow host change). */
  requeueAfterMs?: number;
  /** The key's facts to record with its convergence, in the same write (only with observedGeneration). */
  facts?: Record<string, unknown>;
  /** The object was removed (its rows are gone): its operations settle, and its status row goes instead of being recorded. */
  gone?: boolean;
}

export interface Reconciler {
  kind: string;
  listKeys(): Promise<string[]>;
  reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult>;
}

export interface Settler {
  /** Settles operations whose target generation <= observedGeneration; records `facts` when given; `gone`: removes the key's status instead. */
  converged(kind: string, key: string, observedGeneration: number, facts?: Record<string, unknown>, gone?: boolean): Promise<void>;
  /** terminal: fail pending operations; transient: only record the last error. */
  failed(kind: string, key: string, message: string, terminal: boolean): Promise<void>;
}

/** The subset of pino's logger the runtime uses. */
export interface RuntimeLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child?(b: object): RuntimeLogger;
}
